package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// sightingRequest is POST /sightings: a report by its id, or by what it
// names (as check-malicious asks), and the sighting.
type sightingRequest struct {
	ThreatID           *string `json:"threat_id"`
	ReportType         *string `json:"report_type"`
	ResourceIdentifier *string `json:"resource_identifier"`
	Ecosystem          *string `json:"ecosystem"`
	Version            *string `json:"version"`
	Type               *string `json:"type"`
	Source             *string `json:"source"`
	ObservedAt         *string `json:"observed_at"`
	Count              *int64  `json:"count"`
	Note               *string `json:"note"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// addSighting is POST /sightings (docs/api/sightings.md): 201
// {"sighting_id"}; a report that is not verified is 404, a second
// false-positive vote of the same user 409.
func (s *Server) addSighting(c *echo.Context) error {
	var req sightingRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	threatID := strings.TrimSpace(str(req.ThreatID))
	switch {
	case threatID != "" && (req.ReportType != nil || req.ResourceIdentifier != nil):
		return core.Invalid("threat_id", "give threat_id, or report_type and resource_identifier, not both")
	case threatID != "":
		if _, err := uuid.Parse(threatID); err != nil {
			return core.Invalid("threat_id", "is not a report id (a UUID)")
		}
	case req.ReportType == nil || req.ResourceIdentifier == nil:
		return core.Invalid("threat_id", "is required, or report_type and resource_identifier naming a verified report")
	default:
		res, err := s.index.CheckQuery(ctx, core.CheckQuery{ReportType: core.ReportType(*req.ReportType), ResourceIdentifier: *req.ResourceIdentifier,
			Ecosystem: str(req.Ecosystem), Version: str(req.Version)})
		if err != nil {
			return err
		}
		if res.Count == 0 {
			return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf("No verified report names %s %q", *req.ReportType, *req.ResourceIdentifier)}
		}
		threatID = res.ID.String()
	}
	r := core.SightingRequest{Type: str(req.Type), Source: str(req.Source), Note: str(req.Note), ObservedAt: str(req.ObservedAt)}
	if req.Count != nil {
		if *req.Count == 0 {
			return core.Invalid("count", "must be between 1 and %d (got 0)", core.MaxSightingCount)
		}
		r.Count = *req.Count
	}
	who := principal(c).User
	sg, err := core.NewSighting(r, threatID, who.ID, time.Now())
	if err != nil {
		return err
	}
	// Each user's sightings of the hour, votes included, whatever their
	// tokens: counted before storage, so refused votes count too.
	if limit := s.opts.SightingsPerHour[who.Tier]; limit > 0 {
		if res := s.hourLimiter.Take(who.ID, limit, 1); !res.Allowed {
			return tooManyRequests(fmt.Sprintf("Sighting limit exceeded: at most %d sightings an hour per user; try again later", limit), res.ResetSeconds())
		}
	}
	if err := s.sightings.Add(ctx, sg); err != nil {
		return err
	}

	return c.JSON(http.StatusCreated, map[string]any{"sighting_id": sg.ID, "threat_id": threatID})
}

// listSightings is GET /threats/{id}/sightings?cursor=&limit=: a verified
// report's sightings, newest first; who reported each is shown to
// reviewers and administrators only.
func (s *Server) listSightings(c *echo.Context) error {
	qs := c.QueryParams()
	if err := onlyParams(qs, []string{"cursor", "limit"}); err != nil {
		return err
	}
	id := c.Param("id")
	if _, err := uuid.Parse(id); err != nil {
		return notFound("no verified report %q", id)
	}
	ctx := c.Request().Context()
	t, err := s.index.Record(ctx, uuid.MustParse(id))
	if err != nil || t.Status != core.StatusVerified {
		return notFound("no verified report %s", id)
	}
	q := core.SightingQuery{ThreatID: id}
	if q.Limit, err = pageLimit(qs.Get("limit"), 1000); err != nil {
		return err
	}
	if v := qs.Get("cursor"); v != "" {
		raw, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil {
			return core.Invalid("cursor", "is not a cursor of this list (use next_cursor as it was given)")
		}
		q.Cursor = string(raw)
	}
	page, err := s.store.ListSightings(ctx, q)
	if err != nil {
		return err
	}
	role := principal(c).User.Role
	reviewer := role == core.RoleReviewer || role == core.RoleAdmin
	out := make([]map[string]any, len(page.Sightings))
	for i, sg := range page.Sightings {
		m := map[string]any{"sighting_id": sg.ID, "type": sg.Type, "source": sg.Source, "observed_at": sg.ObservedAt.UTC().Format(time.RFC3339Nano),
			"count": sg.Count, "note": sg.Note, "automatic": sg.Auto}
		if reviewer && sg.UserID != "" {
			m["user_id"] = sg.UserID
		}
		out[i] = m
	}
	next := ""
	if page.Next != "" {
		next = base64.RawURLEncoding.EncodeToString([]byte(page.Next))
	}
	return c.JSON(http.StatusOK, map[string]any{"sightings": out, "count": len(out), "next_cursor": nextCursor(next)})
}
