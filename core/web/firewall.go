package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// waivers are the waiver use cases on the site's store.
func (s *Site) waivers() firewall.WaiverService {
	return firewall.WaiverService{Store: s.store, Cache: s.opts.FirewallWaivers}
}

// firewallPage is the administrators' firewall page (docs/firewall.md):
// the waivers in force with a form to make one, and this daemon's latest
// refusals.
func (s *Site) firewallPage(c *echo.Context) error {
	return s.renderFirewall(c, http.StatusOK, "", "")
}

func (s *Site) renderFirewall(c *echo.Context, status int, formErr, formField string) error {
	if s.opts.FirewallBlocks == nil {
		return s.errorPage(c, http.StatusNotFound, "The registry firewall is turned off (firewall.enabled).")
	}
	ws, err := s.waivers().InForce(c.Request().Context())
	if err != nil {
		return err
	}
	events, total := s.opts.FirewallBlocks.List()
	return s.render(c, status, "firewall", map[string]any{"Title": "Firewall", "Events": events, "Total": total, "Waivers": ws,
		"FormError": formErr, "FormField": formField, "Ecosystems": firewall.FirewallEcosystems, "Rules": firewall.FirewallRules,
		"Ecosystem": c.FormValue("ecosystem"), "Name": c.FormValue("name"), "Version": c.FormValue("version"),
		"Rule": c.FormValue("rule"), "Reason": c.FormValue("reason"), "For": c.FormValue("for")})
}

func (s *Site) addWaiver(c *echo.Context) error {
	viewer := viewerOf(c).User
	by := viewer.Email
	w, err := s.waivers().Waive(c.Request().Context(), firewall.WaiverRequest{Ecosystem: c.FormValue("ecosystem"), Name: c.FormValue("name"),
		Version: strings.TrimSpace(c.FormValue("version")), Rule: c.FormValue("rule"), Reason: c.FormValue("reason"), For: c.FormValue("for")}, by, viewer.Role)
	var fe *core.FieldError
	switch {
	case errors.As(err, &fe):
		return s.renderFirewall(c, http.StatusBadRequest, fe.Error(), fe.Field)
	case errors.Is(err, core.ErrLimit):
		return s.renderFirewall(c, http.StatusConflict, err.Error(), "")
	case err != nil:
		return err
	}
	s.log.Info("firewall waiver made", "waiver_id", w.ID, "by", by, "ecosystem", w.Ecosystem, "package", w.Name, "version", w.Version, "rule", w.Rule, "until", w.Until)
	return c.Redirect(http.StatusSeeOther, "/admin/firewall")
}

func (s *Site) removeWaiver(c *echo.Context) error {
	if err := s.waivers().Remove(c.Request().Context(), c.Param("id")); errors.Is(err, core.ErrNotFound) {
		return s.errorPage(c, http.StatusNotFound, "No such waiver: it ended or was removed.")
	} else if err != nil {
		return err
	}
	s.log.Info("firewall waiver removed", "waiver_id", c.Param("id"), "by", viewerOf(c).User.Email)
	return c.Redirect(http.StatusSeeOther, "/admin/firewall")
}
