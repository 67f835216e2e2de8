package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// sessionRow is one of the viewer's sessions as the account page lists it.
type sessionRow struct {
	core.Session
	Current bool
}

// account is Settings → Account: the public name, the password, the
// sessions and deleting the account.
func (s *Site) account(c *echo.Context) error {
	return s.accountPage(c, http.StatusOK, nil)
}

// accountPage renders the account page with errs (form field → message).
func (s *Site) accountPage(c *echo.Context, status int, errs map[string]string) error {
	v := viewerOf(c)
	list, err := s.accounts.Sessions(c.Request().Context(), v.User)
	if err != nil {
		return err
	}
	current := core.HashSessionSecret(v.sessionID)
	rows := make([]sessionRow, len(list))
	for i, ses := range list {
		rows[i] = sessionRow{Session: ses, Current: ses.Hash == current}
	}
	if errs == nil {
		errs = map[string]string{}
	}
	name := v.User.Name
	if n, ok := errs["name_value"]; ok {
		name = n
	}
	// The store lists the newest MaxListSessions: at that many, say so
	// rather than give a count that may be short.
	exposed, err := s.ownExposures(c.Request().Context(), v.User.Email)
	if err != nil {
		return err
	}
	return s.render(c, status, "account", map[string]any{"Title": "Account", "User": v.User, "Name": name,
		"Sessions": rows, "Others": len(rows) - 1, "Capped": len(rows) >= core.MaxListSessions, "Errors": errs, "Exposed": exposed})
}

// rename is the account page's "Save name".
func (s *Site) rename(c *echo.Context) error {
	name := c.FormValue("name")
	u, err := s.accounts.Rename(c.Request().Context(), viewerOf(c).User, name)
	var fe *core.FieldError
	if errors.As(err, &fe) {
		return s.accountPage(c, http.StatusBadRequest, map[string]string{"name": "Public name " + fe.Message + ".", "name_value": name})
	}
	if err != nil {
		return err
	}
	s.setFlash(c, "ok", "Your public name is now “"+u.Name+"”.")
	s.synced(c, "the new name")
	return c.Redirect(http.StatusSeeOther, "/settings/account")
}

// checkAttempt bounds password checks on the account page like log-ins
// (attempt), so that a stolen session cannot be used to guess the
// password; ok false means the page was rendered.
func (s *Site) checkAttempt(c *echo.Context, field string) (undo func(), ok bool, err error) {
	undo, wait, ok := s.attempt(c, viewerOf(c).User.Email)
	if !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(wait))
		return nil, false, s.accountPage(c, http.StatusTooManyRequests, map[string]string{field: fmt.Sprintf("Too many password attempts: try again in %d seconds.", wait)})
	}
	return undo, true, nil
}

// boundedPassword keeps an over-long input from being hashed (it is
// checked as "" instead, which no password is).
func boundedPassword(pw string) string {
	if len(pw) > 4*core.PasswordMax {
		return ""
	}
	return pw
}

// changePassword is the account page's "Change password": the current
// password is required; every other session of the user ends.
func (s *Site) changePassword(c *echo.Context) error {
	undo, ok, err := s.checkAttempt(c, "current_password")
	if !ok {
		return err
	}
	v := viewerOf(c)
	s.hashing <- struct{}{}
	ch, err := s.accounts.ChangePassword(c.Request().Context(), v.User, boundedPassword(c.FormValue("current_password")), c.FormValue("password"), v.sessionID)
	<-s.hashing
	var fe *core.FieldError
	switch {
	case errors.Is(err, core.ErrWrongPassword):
		return s.accountPage(c, http.StatusBadRequest, map[string]string{"current_password": "This is not your current password."})
	case errors.As(err, &fe):
		undo()
		return s.accountPage(c, http.StatusBadRequest, map[string]string{"password": "New password " + fe.Message + "."})
	case err != nil:
		return err
	}
	undo()
	s.log.Info("web: password changed", "user", v.User.ID, "sessions_ended", ch.SessionsEnded)
	s.setFlash(c, "ok", fmt.Sprintf("Your password is changed. %s", endedSessions(ch.SessionsEnded)))
	return c.Redirect(http.StatusSeeOther, "/settings/account")
}

// endedSessions says how many other sessions a change logged out.
func endedSessions(n int) string {
	switch n {
	case 0:
		return "You were logged in nowhere else."
	case 1:
		return "Your 1 other session is logged out."
	}
	return fmt.Sprintf("Your %d other sessions are logged out.", n)
}

// endSessions is the account page's "Log out other sessions".
func (s *Site) endSessions(c *echo.Context) error {
	v := viewerOf(c)
	n, err := s.accounts.EndOtherSessions(c.Request().Context(), v.User, v.sessionID)
	if err != nil {
		return err
	}
	s.setFlash(c, "ok", endedSessions(n))
	return c.Redirect(http.StatusSeeOther, "/settings/account")
}

// deleteAccount is the account page's "Delete my account": the password
// and the acknowledgement are required.
func (s *Site) deleteAccount(c *echo.Context) error {
	if c.FormValue("understood") != "yes" {
		return s.accountPage(c, http.StatusBadRequest, map[string]string{"understood": "Tick the box to confirm that you understand what deleting your account does."})
	}
	undo, ok, err := s.checkAttempt(c, "delete_password")
	if !ok {
		return err
	}
	v := viewerOf(c)
	s.hashing <- struct{}{}
	ch, err := s.accounts.DeleteAccount(c.Request().Context(), v.User, boundedPassword(c.FormValue("delete_password")))
	<-s.hashing
	if errors.Is(err, core.ErrWrongPassword) {
		return s.accountPage(c, http.StatusBadRequest, map[string]string{"delete_password": "This is not your password."})
	}
	if err != nil {
		return err
	}
	undo()
	s.log.Info("web: account deleted", "user", v.User.ID, "reports_withdrawn", ch.ReportsWithdrawn, "tokens_revoked", ch.TokensRevoked)
	s.synced(c, "the deletion")
	s.clearCookie(c, sessionCookie)
	// The flash is bound to the session that just ended: show the
	// goodbye page directly.
	c.Set(viewerKey, viewer{})
	return s.render(c, http.StatusOK, "deleted", map[string]any{"Title": "Account deleted", "Changed": ch})
}

// synced makes this daemon's caches see a change at once (others follow
// within cache.freshness).
func (s *Site) synced(c *echo.Context, what string) {
	if err := s.sync(c.Request().Context()); err != nil {
		s.log.Warn("web: "+what+" will show within cache.freshness", "error", err.Error())
	}
}

// usersPage is how many users one page of /admin/users lists.
const usersPage = 50

// users is the administrators' list of accounts, in e-mail order, a page
// at a time (after= the last e-mail of the page before), or the one with
// the e-mail asked for.
func (s *Site) users(c *echo.Context) error {
	ctx := c.Request().Context()
	data := map[string]any{"Title": "Users"}
	var list []core.User
	if find := c.QueryParam("email"); find != "" {
		data["Find"] = find
		u, err := s.store.UserByEmail(ctx, core.NormaliseEmail(find))
		switch {
		case errors.Is(err, core.ErrNotFound):
			data["NotFound"] = true
		case err != nil:
			return err
		default:
			list = []core.User{u}
		}
	} else {
		after := c.QueryParam("after")
		page, err := s.store.ListUsers(ctx, core.UserQuery{After: after, Limit: usersPage + 1})
		if err != nil {
			return err
		}
		if len(page) > usersPage {
			page = page[:usersPage]
			data["Next"] = page[len(page)-1].Email
		}
		list, data["Paged"] = page, after != ""
	}
	data["Users"] = list
	return s.render(c, http.StatusOK, "users", data)
}

// setDisabled is /admin/users' Disable (after a confirmation page) and
// Enable.
func (s *Site) setDisabled(c *echo.Context) error {
	action := c.Param("action")
	if action != "disable" && action != "enable" {
		return s.errorPage(c, http.StatusNotFound, "There is no page at this address.")
	}
	disable := action == "disable"
	email := core.NormaliseEmail(c.FormValue("email"))
	if disable && email == viewerOf(c).User.Email {
		return s.errorPage(c, http.StatusBadRequest, "You cannot disable your own account here: another administrator can, or the command line (threatd user disable).")
	}
	if disable && c.FormValue("confirm") != "yes" {
		return s.render(c, http.StatusOK, "confirm", map[string]any{"Title": "Disable " + email + "?",
			"Message": "The account's API tokens are revoked and its web sessions ended at once; it cannot log in until enabled again. " +
				"Its reports stay as they are. Enabling it later does not bring the revoked tokens back.",
			"Action": "/admin/users/disable", "Button": "Disable account", "Cancel": "/admin/users", "Fields": map[string]string{"email": email}})
	}
	ch, err := s.accounts.SetDisabled(c.Request().Context(), email, disable)
	var fe *core.FieldError
	if errors.As(err, &fe) {
		return s.errorPage(c, http.StatusBadRequest, "E-mail "+fe.Message+".")
	}
	if err != nil {
		return err
	}
	s.synced(c, "the account's state")
	msg := ch.User.Email + " is enabled: it can log in again (its old tokens stay revoked)."
	if disable {
		s.log.Info("web: account disabled", "user", ch.User.ID, "by", viewerOf(c).User.ID)
		msg = fmt.Sprintf("%s is disabled: %s revoked, %s ended.", ch.User.Email,
			core.Count(ch.TokensRevoked, "token", "tokens"), core.Count(ch.SessionsEnded, "session", "sessions"))
	}
	s.setFlash(c, "ok", msg)
	return c.Redirect(http.StatusSeeOther, "/admin/users?email="+url.QueryEscape(ch.User.Email))
}
