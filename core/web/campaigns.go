package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// campaignsShown bounds the campaigns the reviewers' page lists.
const campaignsShown = 200

// suggestionsShown bounds the suggestions the reviewers' page lists.
const suggestionsShown = 50

// campaignRefresher is what makes this daemon's records name a changed
// campaign at once (core/community's View).
type campaignRefresher interface {
	RefreshCampaigns(ctx context.Context) error
}

// campaigns is the campaigns' use case, this daemon's records told of
// each change.
func (s *Site) campaigns() community.Campaigns {
	return community.Campaigns{Store: s.store, Changed: func(ctx context.Context) {
		if r, ok := s.opts.Community.(campaignRefresher); ok {
			if err := r.RefreshCampaigns(ctx); err != nil {
				s.log.Warn("campaigns: reading them again failed; records show the change at the next look", "error", err.Error())
			}
		}
	}}
}

// reviewCampaigns is /review/campaigns (reviewers): the campaigns, a form
// for a new one, and the last suggestions, each with a form that makes a
// campaign of its reports.
func (s *Site) reviewCampaigns(c *echo.Context) error {
	return s.renderCampaigns(c, http.StatusOK, "", "")
}

func (s *Site) renderCampaigns(c *echo.Context, status int, formErr, formField string) error {
	// The first campaignsShown by name; past them the page says so (the
	// API and threatd campaign list page through every one).
	list, err := s.store.ListCampaigns(c.Request().Context(), community.CampaignQuery{Limit: campaignsShown + 1})
	if err != nil {
		return err
	}
	more := len(list) > campaignsShown
	list = list[:min(len(list), campaignsShown)]
	data := map[string]any{"Title": "Campaigns", "Campaigns": list, "MoreCampaigns": more, "FormError": formErr, "FormField": formField}
	if res, at, ok := s.suggestions.Last(); ok {
		shown := res.Suggestions[:min(len(res.Suggestions), suggestionsShown)]
		data["Suggestions"], data["SuggestedAt"], data["SuggestionsTotal"], data["TooLarge"] = shown, at, len(res.Suggestions), res.TooLarge
		data["Covered"], data["ReportsRead"], data["IndicatorsCapped"] = res.Covered, int64(res.Reports), res.IndicatorsCapped
	}
	if f, _ := c.FormValues(); f != nil {
		data["Form"] = f
	}
	return s.render(c, status, "review-campaigns", data)
}

// threatIDs reads report ids from a form field: separated by spaces,
// commas or lines.
func threatIDs(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

// createCampaign is the new-campaign form (and a suggestion's).
func (s *Site) createCampaign(c *echo.Context) error {
	f, _ := c.FormValues()
	name, desc := f.Get("name"), f.Get("description")
	camp, err := s.campaigns().Create(c.Request().Context(), viewerOf(c).User,
		community.CampaignRequest{Name: &name, Description: &desc, Add: threatIDs(f.Get("threat_ids"))})
	if err != nil {
		return s.campaignFormError(c, err)
	}
	s.setFlash(c, "ok", fmt.Sprintf("Campaign “%s” made with %s.", camp.Name, core.Count(len(camp.ThreatIDs), "report", "reports")))
	return c.Redirect(http.StatusSeeOther, "/campaigns/"+camp.ID)
}

// campaignFormError shows a refused campaign form beside its field.
func (s *Site) campaignFormError(c *echo.Context, err error) error {
	var fe *core.FieldError
	var nf *core.NotFoundError
	switch {
	case errors.As(err, &fe):
		return s.renderCampaigns(c, http.StatusBadRequest, fe.Field+": "+fe.Message, fe.Field)
	case errors.As(err, &nf):
		return s.renderCampaigns(c, http.StatusBadRequest, "threat_ids: "+err.Error(), "threat_ids")
	}
	return err
}

// findSuggestions works the suggestions out again (one pass over every
// verified report) and shows them.
func (s *Site) findSuggestions(c *echo.Context) error {
	res, _, err := s.suggestions.Get(c.Request().Context(), s.store, true)
	if err != nil {
		return err
	}
	s.setFlash(c, "ok", fmt.Sprintf("%s from %s in %s.", core.Count(len(res.Suggestions), "suggestion", "suggestions"),
		core.Count(res.Reports, "verified report", "verified reports"), res.Took.Round(time.Millisecond)))
	return c.Redirect(http.StatusSeeOther, "/review/campaigns#suggestions")
}

// changeCampaign is the reviewers' form on a campaign's page: rename and
// describe it, or add or remove reports.
func (s *Site) changeCampaign(c *echo.Context) error {
	f, _ := c.FormValues()
	req := community.CampaignRequest{}
	switch f.Get("action") {
	case "edit":
		name, desc := f.Get("name"), f.Get("description")
		req.Name, req.Description = &name, &desc
	case "add":
		req.Add = threatIDs(f.Get("threat_ids"))
	case "remove":
		req.Remove = threatIDs(f.Get("threat_ids"))
	default:
		return s.errorPage(c, http.StatusBadRequest, "action: must be edit, add or remove")
	}
	ctx := c.Request().Context()
	camp, err := s.campaigns().Update(ctx, viewerOf(c).User, c.Param("id"), req)
	s.forgetCampaign(c.Param("id"))
	var fe *core.FieldError
	var nf *core.NotFoundError
	switch {
	case errors.As(err, &fe):
		s.setFlash(c, "error", "Not done: "+fe.Field+": "+fe.Message)
		return c.Redirect(http.StatusSeeOther, "/campaigns/"+c.Param("id"))
	case errors.As(err, &nf) && nf.What != "campaign":
		s.setFlash(c, "error", "Not done: "+err.Error())
		return c.Redirect(http.StatusSeeOther, "/campaigns/"+c.Param("id"))
	case errors.As(err, &nf):
		return s.errorPage(c, http.StatusNotFound, "No campaign has this id.")
	case err != nil:
		return err
	}
	s.setFlash(c, "ok", fmt.Sprintf("Campaign “%s” has %s.", camp.Name, core.Count(len(camp.ThreatIDs), "report", "reports")))
	return c.Redirect(http.StatusSeeOther, "/campaigns/"+camp.ID)
}

// suggestionName is the name a suggestion's form proposes.
func suggestionName(sg community.Suggestion) string {
	switch sg.Reason {
	case community.ReasonTag:
		return sg.Detail
	case community.ReasonIndicator:
		return "Reports naming " + sg.Detail
	}
	return fmt.Sprintf("%d near-identical reports", len(sg.ThreatIDs))
}
