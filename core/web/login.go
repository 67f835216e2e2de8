package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// safeNext keeps a post-log-in redirect on this site: a local path only.
// It judges next as a browser resolves it: the WHATWG URL parser removes
// every tab and newline first (so "/\t/evil.example/" is "//evil.example/",
// another host) and reads a backslash as a slash. Whatever could leave
// this origin, or holds another control character, goes to My submissions.
func safeNext(next string) string {
	const home = "/me/submissions"
	cleaned := strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, next)
	if !strings.HasPrefix(cleaned, "/") || len(cleaned) > 2048 {
		return home
	}
	if len(cleaned) > 1 && (cleaned[1] == '/' || cleaned[1] == '\\') {
		return home
	}
	for _, r := range cleaned {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return home
		}
	}
	u, err := url.Parse(cleaned)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return home
	}
	return cleaned
}

func (s *Site) signupForm(c *echo.Context) error {
	if s.opts.Signup != SignupOpen {
		return s.errorPage(c, http.StatusForbidden, "Sign-up is closed on this threatd: ask an administrator for an account.")
	}
	return s.render(c, http.StatusOK, "signup", map[string]any{"Title": "Sign up", "Form": url.Values{}, "Errors": map[string]string{}})
}

func (s *Site) signup(c *echo.Context) error {
	if s.opts.Signup != SignupOpen {
		return s.errorPage(c, http.StatusForbidden, "Sign-up is closed on this threatd: ask an administrator for an account.")
	}
	f, _ := c.FormValues()
	email, name, pw := f.Get("email"), f.Get("name"), f.Get("password")
	again := s.logins.Take("signup-ip:"+c.RealIP(), s.opts.LoginAttemptsIP, 1)
	if !again.Allowed {
		return s.render(c, http.StatusTooManyRequests, "signup", map[string]any{"Title": "Sign up", "Form": f,
			"Errors": map[string]string{"form": fmt.Sprintf("Too many sign-ups from your address: try again in %d seconds.", again.ResetSeconds())}})
	}
	s.hashing <- struct{}{}
	u, err := s.accounts.SignUp(c.Request().Context(), email, name, pw)
	<-s.hashing
	if err != nil {
		errs := map[string]string{}
		var fe *core.FieldError
		var ce *core.ConflictError
		switch {
		case errors.As(err, &fe):
			if fe.Field == "name" {
				errs["name"] = "Public name " + fe.Message
			} else {
				errs[fe.Field] = strings.ToUpper(fe.Field[:1]) + fe.Field[1:] + " " + fe.Message
			}
		case errors.As(err, &ce):
			errs["email"] = "An account with this e-mail already exists: log in instead."
		default:
			return err
		}
		f.Del("password")
		return s.render(c, http.StatusBadRequest, "signup", map[string]any{"Title": "Sign up", "Form": f, "Errors": errs})
	}
	s.log.Info("web: sign-up", "user", u.ID)
	// The password was just hashed for the new account: the session opens
	// without checking it again.
	secret, err := s.accounts.OpenSession(c.Request().Context(), u, s.opts.SessionTTL)
	if err != nil {
		return err
	}
	return s.setSession(c, secret, "/settings/tokens")
}

func (s *Site) loginForm(c *echo.Context) error {
	return s.render(c, http.StatusOK, "login", map[string]any{"Title": "Log in", "Next": c.QueryParam("next")})
}

// login checks the password under the per-account and per-IP throttles.
// Each attempt is reserved against both before the password is hashed, so
// concurrent attempts cannot overtake the count (all of them used to be
// hashed before the first failure was counted); a successful log-in gives
// its reservation back, so only failures use up the attempts. Once an
// account (or an address) has used its attempts in the window, even the
// right password waits.
func (s *Site) login(c *echo.Context) error {
	f, _ := c.FormValues()
	email := strings.ToLower(strings.TrimSpace(f.Get("email")))
	data := map[string]any{"Title": "Log in", "Next": f.Get("next"), "Email": email}
	undo, wait, ok := s.attempt(c, email)
	if !ok {
		c.Response().Header().Set("Retry-After", strconv.Itoa(wait))
		data["Error"] = fmt.Sprintf("Too many log-in attempts: try again in %d seconds.", wait)
		return s.render(c, http.StatusTooManyRequests, "login", data)
	}
	return s.startSession(c, email, f.Get("password"), safeNext(f.Get("next")), undo)
}

// attempt takes one password attempt from the budgets of the client's
// address and of the account (both or neither), before the password is
// hashed, so that concurrent attempts cannot overtake the count; undo gives
// it back (the password was right). When either budget is spent, ok is
// false and wait is when it refills, in seconds.
func (s *Site) attempt(c *echo.Context, email string) (undo func(), wait int, ok bool) {
	ipKey, acctKey := "ip:"+c.RealIP(), "account:"+email
	ip := s.logins.Take(ipKey, s.opts.LoginAttemptsIP, 1)
	if !ip.Allowed {
		return nil, ip.ResetSeconds(), false
	}
	acct := s.logins.Take(acctKey, s.opts.LoginAttempts, 1)
	if !acct.Allowed {
		s.logins.Take(ipKey, s.opts.LoginAttemptsIP, -1)
		return nil, acct.ResetSeconds(), false
	}
	return func() {
		s.logins.Take(ipKey, s.opts.LoginAttemptsIP, -1)
		s.logins.Take(acctKey, s.opts.LoginAttempts, -1)
	}, 0, true
}

// startSession logs in and sets a new session cookie (a new id at every
// log-in: a session id planted before log-in is never promoted); succeeded
// (if not nil) runs when the password was right.
func (s *Site) startSession(c *echo.Context, email, pw, next string, succeeded func()) error {
	s.hashing <- struct{}{}
	secret, u, err := s.accounts.LogIn(c.Request().Context(), email, boundedPassword(pw), s.opts.SessionTTL)
	<-s.hashing
	if errors.Is(err, core.ErrBadCredentials) {
		return s.render(c, http.StatusUnauthorized, "login", map[string]any{"Title": "Log in", "Email": email, "Next": next,
			"Error": "The e-mail or password is not right."})
	}
	if errors.Is(err, core.ErrAccountDisabled) {
		return s.render(c, http.StatusForbidden, "login", map[string]any{"Title": "Log in", "Email": email, "Next": next,
			"Error": "This account is disabled. Ask an administrator of this threatd to enable it."})
	}
	if err != nil {
		return err
	}
	if succeeded != nil {
		succeeded()
	}
	s.log.Info("web: log-in", "user", u.ID)
	return s.setSession(c, secret, next)
}

// setSession replaces the visitor's session cookie (and ends a previous
// session) with a new one, then goes to next.
func (s *Site) setSession(c *echo.Context, secret, next string) error {
	if old, err := c.Cookie(sessionCookie); err == nil && old.Value != "" {
		_ = s.accounts.LogOut(c.Request().Context(), old.Value)
	}
	s.setCookie(c, sessionCookie, secret, s.opts.SessionTTL)
	s.clearCookie(c, csrfCookie)
	return c.Redirect(http.StatusSeeOther, next)
}

func (s *Site) logout(c *echo.Context) error {
	if v := viewerOf(c); v.LoggedIn {
		if err := s.accounts.LogOut(c.Request().Context(), v.sessionID); err != nil {
			return err
		}
	}
	s.clearCookie(c, sessionCookie)
	return c.Redirect(http.StatusSeeOther, "/")
}
