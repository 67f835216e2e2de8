package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// viewer is who is looking at a page.
type viewer struct {
	User      core.User
	LoggedIn  bool
	sessionID string // the session secret (cookie value); "" when anonymous
}

const viewerKey = "web.viewer"

func viewerOf(c *echo.Context) viewer {
	v, _ := c.Get(viewerKey).(viewer)
	return v
}

// session resolves the session cookie (one storage read) and makes sure an
// anonymous visitor has a CSRF cookie for the log-in and sign-up forms.
func (s *Site) session(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		var v viewer
		if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
			_, u, err := s.accounts.SessionUser(c.Request().Context(), ck.Value)
			switch {
			case err == nil:
				v = viewer{User: u, LoggedIn: true, sessionID: ck.Value}
			case errors.Is(err, core.ErrNotFound):
				s.clearCookie(c, sessionCookie)
			default:
				return s.fail(c, err)
			}
		}
		if !v.LoggedIn {
			if ck, err := c.Cookie(csrfCookie); err != nil || len(ck.Value) < 20 || len(ck.Value) > 100 {
				secret, err := core.NewSessionSecret()
				if err != nil {
					return s.fail(c, err)
				}
				s.setCookie(c, csrfCookie, secret, 0)
				c.Request().AddCookie(&http.Cookie{Name: csrfCookie, Value: secret})
			}
		}
		c.Set(viewerKey, v)
		return next(c)
	}
}

// csrfBinding is what a CSRF token is bound to: the session when logged in,
// otherwise the anonymous CSRF cookie.
func (s *Site) csrfBinding(c *echo.Context) string {
	if v := viewerOf(c); v.LoggedIn {
		return "session:" + v.sessionID
	}
	if ck, err := c.Cookie(csrfCookie); err == nil {
		return "anon:" + ck.Value
	}
	return ""
}

// csrfToken is the token every form carries: an HMAC of the binding under
// the shared key (a signed double-submit token), so it cannot be forged
// without the session's secret and changes when the session does.
func (s *Site) csrfToken(c *echo.Context) string {
	b := s.csrfBinding(c)
	if b == "" {
		return ""
	}
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(b))
	return hex.EncodeToString(m.Sum(nil))
}

// csrf refuses a state-changing request that is cross-origin (the standard
// library's Sec-Fetch-Site/Origin check) or lacks the form's token.
func (s *Site) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if err := s.cop.Check(c.Request()); err != nil {
			return s.errorPage(c, http.StatusForbidden, "This form was sent from another site and was refused (cross-site request forgery protection).")
		}
		want := s.csrfToken(c)
		got := c.Request().PostFormValue(csrfField)
		if want == "" || !hmac.Equal([]byte(got), []byte(want)) {
			return s.errorPage(c, http.StatusForbidden, "This form has expired or was not sent by this site (missing or wrong CSRF token). Reload the page and try again.")
		}
		return next(c)
	}
}

// loggedIn sends anonymous visitors to the log-in page.
func (s *Site) loggedIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if !viewerOf(c).LoggedIn {
			if c.Request().Method == http.MethodGet {
				return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			}
			return s.errorPage(c, http.StatusUnauthorized, "You are not logged in (or your session has ended). Log in and try again.")
		}
		return next(c)
	}
}

// reviewer admits reviewers and admins.
func (s *Site) reviewer(next echo.HandlerFunc) echo.HandlerFunc {
	return s.loggedIn(func(c *echo.Context) error {
		if !viewerOf(c).User.Role.CanReview() {
			return s.errorPage(c, http.StatusForbidden, "The review queue is for reviewers and administrators.")
		}
		return next(c)
	})
}

// admin admits administrators.
func (s *Site) admin(next echo.HandlerFunc) echo.HandlerFunc {
	return s.loggedIn(func(c *echo.Context) error {
		if viewerOf(c).User.Role != core.RoleAdmin {
			return s.errorPage(c, http.StatusForbidden, "This page is for administrators.")
		}
		return next(c)
	})
}

func (s *Site) setCookie(c *echo.Context, name, value string, maxAge time.Duration) {
	ck := &http.Cookie{Name: name, Value: value, Path: "/", Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode}
	if maxAge > 0 {
		ck.MaxAge = int(maxAge.Seconds())
	}
	c.SetCookie(ck)
}

// flash is a one-time message shown on the next page a visitor sees (after
// a form's redirect): it travels in a cookie signed for the visitor's
// session, never in the URL, so no link can make the site say something.
type flash struct {
	Kind    string `json:"k"` // "ok" or "error"
	Message string `json:"m"`
}

// maxFlash bounds a flash message (a cookie holds about 4 KB).
const maxFlash = 600

func (s *Site) flashMAC(c *echo.Context, payload string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte("flash\x00" + s.csrfBinding(c) + "\x00" + payload))
	return hex.EncodeToString(m.Sum(nil))
}

// setFlash sets the message the next page shows.
func (s *Site) setFlash(c *echo.Context, kind, msg string) {
	if len(msg) > maxFlash {
		msg = core.Shorten(msg)
	}
	b, _ := json.Marshal(flash{Kind: kind, Message: msg})
	payload := base64.RawURLEncoding.EncodeToString(b)
	s.setCookie(c, flashCookie, payload+"."+s.flashMAC(c, payload), 5*time.Minute)
}

// takeFlash reads and clears the flash cookie; a forged or stale one (of
// another session) is dropped.
func (s *Site) takeFlash(c *echo.Context) (flash, bool) {
	ck, err := c.Cookie(flashCookie)
	if err != nil || ck.Value == "" {
		return flash{}, false
	}
	s.clearCookie(c, flashCookie)
	payload, mac, ok := strings.Cut(ck.Value, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(s.flashMAC(c, payload))) {
		return flash{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	var f flash
	if err != nil || json.Unmarshal(b, &f) != nil || (f.Kind != "ok" && f.Kind != "error") {
		return flash{}, false
	}
	return f, true
}

func (s *Site) clearCookie(c *echo.Context, name string) {
	c.SetCookie(&http.Cookie{Name: name, Value: "", Path: "/", Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: -1})
}
