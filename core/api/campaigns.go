package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// CampaignJSON is a campaign as the API (and threatd campaign list
// --json) shows it (docs/api/campaigns.md).
type CampaignJSON struct {
	ID          string     `json:"campaign_id"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	FirstSeen   *time.Time `json:"first_seen"`
	LastSeen    *time.Time `json:"last_seen"`
	ThreatIDs   []string   `json:"threat_ids"`
	Tags        []string   `json:"tags"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// CampaignOf is c as the API shows it.
func CampaignOf(c community.Campaign) CampaignJSON {
	out := CampaignJSON{ID: c.ID, Name: c.Name, Description: c.Description, FirstSeen: c.FirstSeen, LastSeen: c.LastSeen,
		ThreatIDs: c.ThreatIDs, Tags: c.Tags, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if out.ThreatIDs == nil {
		out.ThreatIDs = []string{}
	}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	return out
}

// campaignBody is POST and PATCH /campaigns: a new campaign's fields
// (threat_ids its first reports), or a change.
type campaignBody struct {
	Name        *string   `json:"name"`
	Description *string   `json:"description"`
	Tags        *[]string `json:"tags"`
	ThreatIDs   []string  `json:"threat_ids"`
	Add         []string  `json:"add_threat_ids"`
	Remove      []string  `json:"remove_threat_ids"`
}

// campaigns is the campaigns' use case, this daemon's records told of
// each change.
func (s *Server) campaigns() community.Campaigns {
	return community.Campaigns{Store: s.store, Changed: func(ctx context.Context) {
		if err := s.opts.Community.RefreshCampaigns(ctx); err != nil {
			s.log.Warn("campaigns: reading them again failed; records show the change at the next look", "error", err.Error())
		}
	}}
}

// createCampaign is POST /campaigns (reviewers): 201 with the campaign.
func (s *Server) createCampaign(c *echo.Context) error {
	if !principal(c).User.Role.CanReview() {
		return community.NotReviewer{} // before the body is read
	}
	var b campaignBody
	if err := decodeJSON(c, &b); err != nil {
		return err
	}
	if len(b.Add) > 0 || len(b.Remove) > 0 {
		return core.Invalid("threat_ids", "a new campaign's reports are threat_ids (add_threat_ids and remove_threat_ids change one)")
	}
	got, err := s.campaigns().Create(c.Request().Context(), principal(c).User,
		community.CampaignRequest{Name: b.Name, Description: b.Description, Tags: b.Tags, Add: b.ThreatIDs})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, CampaignOf(got))
}

// updateCampaign is PATCH /campaigns/{id} (reviewers).
func (s *Server) updateCampaign(c *echo.Context) error {
	if !principal(c).User.Role.CanReview() {
		return community.NotReviewer{}
	}
	var b campaignBody
	if err := decodeJSON(c, &b); err != nil {
		return err
	}
	if len(b.ThreatIDs) > 0 {
		return core.Invalid("threat_ids", "change a campaign's reports with add_threat_ids and remove_threat_ids")
	}
	got, err := s.campaigns().Update(c.Request().Context(), principal(c).User, c.Param("id"),
		community.CampaignRequest{Name: b.Name, Description: b.Description, Tags: b.Tags, Add: b.Add, Remove: b.Remove})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, CampaignOf(got))
}

// getCampaign is GET /campaigns/{id}, any token.
func (s *Server) getCampaign(c *echo.Context) error {
	got, err := s.store.GetCampaign(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, CampaignOf(got))
}

// campaignPageBytes bounds a page of campaigns (with their report ids).
const campaignPageBytes = 1 << 20

// listCampaigns is GET /campaigns?cursor=&limit=, any token: campaigns by
// name, paged by count (limit 1..200, default 50) and by bytes (1 MiB, at
// least one campaign a page).
func (s *Server) listCampaigns(c *echo.Context) error {
	qs := c.QueryParams()
	if err := onlyParams(qs, []string{"cursor", "limit"}); err != nil {
		return err
	}
	limit, err := pageLimitOr(qs.Get("limit"), 50, 200)
	if err != nil {
		return err
	}
	q := community.CampaignQuery{Limit: limit}
	raw, err := listCursor(qs, "is not a cursor this list gave", func(raw string) bool {
		_, id, ok := strings.Cut(raw, "\x00")
		return ok && id != ""
	})
	if err != nil {
		return err
	}
	q.AfterName, q.AfterID, _ = strings.Cut(raw, "\x00")
	page, err := s.store.ListCampaigns(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := make([]CampaignJSON, 0, len(page))
	size := 0
	for _, camp := range page {
		j := CampaignOf(camp)
		b, _ := json.Marshal(j)
		if len(out) > 0 && size+len(b) > campaignPageBytes {
			break
		}
		size += len(b)
		out = append(out, j)
	}
	var next any
	if len(out) < len(page) || len(page) == limit {
		last := out[len(out)-1]
		next = encodeCursor(last.Name + "\x00" + last.ID)
	}
	return c.JSON(http.StatusOK, map[string]any{"campaigns": out, "count": len(out), "next_cursor": next})
}

// suggestionJSON is one suggestion as the API shows it.
type suggestionJSON struct {
	Reason     string   `json:"reason"`
	Detail     string   `json:"detail"`
	Size       int      `json:"size"`
	Similarity *float64 `json:"similarity,omitempty"`
	ThreatIDs  []string `json:"threat_ids"`
}

// campaignSuggestions is GET /campaigns/suggestions?limit=&refresh=
// (reviewers): groups of verified reports that may be campaigns, largest
// first, each with its reason (docs/api/campaigns.md).
func (s *Server) campaignSuggestions(c *echo.Context) error {
	if !principal(c).User.Role.CanReview() {
		return &Error{Status: http.StatusForbidden, Message: "Only reviewers and administrators may read campaign suggestions"}
	}
	qs := c.QueryParams()
	if err := onlyParams(qs, []string{"limit", "refresh"}); err != nil {
		return err
	}
	limit, err := pageLimit(qs.Get("limit"), 1000)
	if err != nil {
		return err
	}
	refresh := qs.Get("refresh")
	if refresh != "" && refresh != "true" && refresh != "false" {
		return core.Invalid("refresh", "must be true or false (got %q)", refresh)
	}
	res, at, err := s.suggestions.Get(c.Request().Context(), s.store, refresh == "true")
	if err != nil {
		return err
	}
	out := make([]suggestionJSON, 0, min(limit, len(res.Suggestions)))
	for _, sg := range res.Suggestions[:min(limit, len(res.Suggestions))] {
		j := suggestionJSON{Reason: sg.Reason, Detail: sg.Detail, Size: len(sg.ThreatIDs), ThreatIDs: sg.ThreatIDs}
		if sg.Reason == community.ReasonText {
			sim := sg.Similarity
			j.Similarity = &sim
		}
		out = append(out, j)
	}
	tooLarge := make([]map[string]any, len(res.TooLarge))
	for i, tl := range res.TooLarge {
		tooLarge[i] = map[string]any{"reason": tl.Reason, "detail": tl.Detail, "size": tl.Size}
	}
	return c.JSON(http.StatusOK, map[string]any{"suggestions": out, "count": len(out), "total": len(res.Suggestions),
		"too_large": tooLarge, "covered": res.Covered, "indicators_capped": res.IndicatorsCapped, "reports_read": res.Reports, "computed_at": at, "took_ms": res.Took.Milliseconds()})
}
