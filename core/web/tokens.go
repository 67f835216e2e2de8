package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// tokens is Settings → API Tokens.
func (s *Site) tokens(c *echo.Context) error {
	return s.renderTokens(c, http.StatusOK, "", "", nil)
}

func (s *Site) renderTokens(c *echo.Context, status int, secret, nameErr string, created *core.Token) error {
	list, err := s.accounts.Tokens(c.Request().Context(), viewerOf(c).User)
	if err != nil {
		return err
	}
	return s.render(c, status, "tokens", map[string]any{"Title": "API Tokens", "Tokens": list, "Secret": secret,
		"NameError": nameErr, "Created": created, "BasePath": s.opts.BasePath, "Host": c.Request().Host})
}

func (s *Site) generateToken(c *echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	secret, tok, err := s.accounts.IssueUserToken(c.Request().Context(), viewerOf(c).User, name)
	var fe *core.FieldError
	if errors.As(err, &fe) {
		return s.renderTokens(c, http.StatusBadRequest, "", "Name "+fe.Message, nil)
	}
	if err != nil {
		return err
	}
	// The secret is shown in this response only; the page is no-store.
	return s.renderTokens(c, http.StatusOK, secret, "", &tok)
}

func (s *Site) revokeToken(c *echo.Context) error {
	ctx := c.Request().Context()
	if c.FormValue("confirm") != "yes" {
		// Revoking cannot be undone: ask first (a page, so it works
		// without script).
		list, err := s.accounts.Tokens(ctx, viewerOf(c).User)
		if err != nil {
			return err
		}
		for _, t := range list {
			if t.ID == c.Param("id") && !t.Revoked() {
				return s.render(c, http.StatusOK, "confirm", map[string]any{"Title": "Revoke token “" + t.Name + "”?",
					"Message": "Tools that use " + core.TokenDisplay(t) + " will be refused from now on. This cannot be undone: a revoked token stays revoked.",
					"Action":  "/settings/tokens/" + t.ID + "/revoke", "Button": "Revoke token", "Cancel": "/settings/tokens"})
			}
		}
		return s.errorPage(c, http.StatusNotFound, "You have no active token with this id.")
	}
	t, err := s.accounts.RevokeUserToken(ctx, viewerOf(c).User, c.Param("id"))
	if err != nil {
		return err
	}
	s.setFlash(c, "ok", "Token “"+t.Name+"” is revoked.")
	if err := s.sync(ctx); err != nil {
		s.log.Warn("web: the revocation will show within cache.freshness", "error", err.Error())
	}
	return c.Redirect(http.StatusSeeOther, "/settings/tokens")
}
