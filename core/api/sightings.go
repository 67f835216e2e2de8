package api

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
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

// addSighting is POST /sightings (docs/api/sightings.md): 201
// {"sighting_id"}; a report that is not verified is 404, a second
// false-positive vote of the same user 409.
func (s *Server) addSighting(c *echo.Context) error {
	if s.opts.Sightings == nil {
		return &Error{Status: http.StatusServiceUnavailable, Message: "Sightings are not kept by this server"}
	}
	var req sightingRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	sg, err := s.opts.Sightings.Add(c.Request().Context(), principal(c).User, community.SightingInput{
		ThreatID: req.ThreatID, ReportType: req.ReportType, ResourceIdentifier: req.ResourceIdentifier, Ecosystem: req.Ecosystem, Version: req.Version,
		Type: deref(req.Type), Source: deref(req.Source), Note: deref(req.Note), ObservedAt: deref(req.ObservedAt), Count: req.Count})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"sighting_id": sg.ID, "threat_id": sg.ThreatID})
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// listSightings is GET /threats/{id}/sightings?cursor=&limit=: a verified
// report's sightings, newest first; who reported each is shown to
// reviewers (by id and public name) and administrators (with e-mail) only.
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
	q := community.SightingQuery{ThreatID: id}
	if q.Limit, err = pageLimit(qs.Get("limit"), 1000); err != nil {
		return err
	}
	if q.Cursor, err = listCursor(qs, msgNotACursor, nil); err != nil {
		return err
	}
	page, err := s.store.ListSightings(ctx, q)
	if err != nil {
		return err
	}
	role := principal(c).User.Role
	reviewer, admin := role == core.RoleReviewer || role == core.RoleAdmin, role == core.RoleAdmin
	out := make([]map[string]any, len(page.Sightings))
	for i, sg := range page.Sightings {
		m := map[string]any{"sighting_id": sg.ID, "type": sg.Type, "source": sg.Source, "observed_at": sg.ObservedAt.UTC().Format(time.RFC3339Nano),
			"count": sg.Count, "note": sg.Note, "automatic": sg.Auto}
		// Who reported it, for reviewers by public name (null when the
		// user gave none), for administrators by e-mail too.
		if reviewer && sg.UserID != "" {
			m["user_id"], m["user_name"] = sg.UserID, nullable(sg.UserName)
			if admin {
				m["user_email"] = sg.UserEmail
			}
		}
		out[i] = m
	}
	next := encodeCursor(page.Next)
	return c.JSON(http.StatusOK, map[string]any{"sightings": out, "count": len(out), "next_cursor": nextCursor(next)})
}
