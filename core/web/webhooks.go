package web

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/webhooks"
)

// subscriptions are the webhook use cases on the site's store.
func (s *Site) subscriptions() webhooks.Subscriptions {
	return webhooks.Subscriptions{Store: s.store, AllowPrivate: s.opts.WebhooksAllowPrivate}
}

// webhooks is the administrators' page of push subscriptions
// (docs/webhooks.md): the list with each one's state, and a form to add
// one, whose secret the answer shows once.
func (s *Site) webhooks(c *echo.Context) error {
	return s.renderWebhooks(c, http.StatusOK, "", "", nil)
}

func (s *Site) renderWebhooks(c *echo.Context, status int, secret, formErr string, added *webhooks.Webhook) error {
	list, err := s.subscriptions().List(c.Request().Context())
	if err != nil {
		return err
	}
	return s.render(c, status, "webhooks", map[string]any{"Title": "Webhooks", "Webhooks": list, "Secret": secret, "Added": added,
		"FormError": formErr, "Events": append(slices.Clone(webhooks.WebhookEvents), firewall.EventFirewallBlocked, firewall.EventFirewallWarned), "Registries": core.PackageRegistries,
		"URL": c.FormValue("url"), "Ecosystem": c.FormValue("ecosystem")})
}

func (s *Site) addWebhook(c *echo.Context) error {
	var events []string
	if form, err := c.FormValues(); err == nil {
		events = form["events"]
	}
	w, err := s.subscriptions().Add(c.Request().Context(), webhooks.NewSubscription{URL: strings.TrimSpace(c.FormValue("url")), Events: events,
		Ecosystem: c.FormValue("ecosystem"), CreatedBy: "web:" + viewerOf(c).User.Email})
	var fe *core.FieldError
	switch {
	case errors.As(err, &fe):
		return s.renderWebhooks(c, http.StatusBadRequest, "", fe.Error(), nil)
	case errors.Is(err, core.ErrLimit):
		return s.renderWebhooks(c, http.StatusConflict, "", err.Error(), nil)
	case err != nil:
		return err
	}
	s.log.Info("webhook added", "webhook", w.ID, "url", webhooks.WebhookURLForLog(w.URL), "by", viewerOf(c).User.Email)
	return s.renderWebhooks(c, http.StatusOK, w.Secret, "", &w)
}

func (s *Site) removeWebhook(c *echo.Context) error {
	if err := s.subscriptions().Remove(c.Request().Context(), c.Param("id")); errors.Is(err, core.ErrNotFound) {
		return s.errorPage(c, http.StatusNotFound, "No such webhook subscription.")
	} else if err != nil {
		return err
	}
	s.log.Info("webhook removed", "webhook", c.Param("id"), "by", viewerOf(c).User.Email)
	return c.Redirect(http.StatusSeeOther, "/admin/webhooks")
}

func (s *Site) enableWebhook(c *echo.Context) error {
	if _, err := s.subscriptions().Enable(c.Request().Context(), c.Param("id")); errors.Is(err, core.ErrNotFound) {
		return s.errorPage(c, http.StatusNotFound, "No such webhook subscription.")
	} else if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/admin/webhooks")
}
