package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/feed"
	"github.com/threatd/threatd/core/ioc"
)

// countPaid records every paid call per token (anti-harvesting accounting).
func (s *Server) countPaid(endpoint string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			s.usage.Count(principal(c).Token.ID, endpoint)
			return next(c)
		}
	}
}

func (s *Server) records(threats []core.Threat, viewer core.Principal) []any {
	out := make([]any, len(threats))
	for i, t := range threats {
		out[i] = s.toRecord(t, viewer)
	}
	return out
}

// feedChange says what happened to a report (core.ChangeVerified, …), when
// it happened here, and the report's content version after it.
type feedChange struct {
	Type    string `json:"type"`
	At      string `json:"at"`
	Version int    `json:"version"`
}

func nextCursor(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// threatFeed is GET /threat-feed.
func (s *Server) threatFeed(c *echo.Context) error {
	qs, err := queryValues(c)
	if err != nil {
		return err
	}
	if err := onlyParams(qs, []string{"since", "until", "hours", "ecosystem", "cursor", "limit", "mode"}); err != nil {
		return err
	}
	p, err := s.paid.Feed(c.Request().Context(), principal(c), feed.Request{
		Since: qs.Get("since"), Until: qs.Get("until"), Hours: qs.Get("hours"),
		Ecosystem: qs.Get("ecosystem"), Cursor: qs.Get("cursor"), Limit: qs.Get("limit"), Mode: qs.Get("mode"),
	})
	if err != nil {
		return err
	}
	if qs.Get("mode") == feed.ModeChanges {
		out := make([]any, len(p.Changes))
		for i, it := range p.Changes {
			out[i] = s.toChangedRecord(it.Threat, principal(c),
				feedChange{Type: it.Event.Kind, At: it.Event.At.Format(time.RFC3339Nano), Version: it.Event.Version})
		}
		return c.JSON(http.StatusOK, map[string]any{
			"mode":        feed.ModeChanges,
			"threats":     out,
			"count":       len(out),
			"next_cursor": nextCursor(p.NextCursor),
			"since":       p.From.Format(time.RFC3339Nano),
			"until":       p.To.Format(time.RFC3339Nano),
		})
	}
	return c.JSON(http.StatusOK, map[string]any{
		"threats":     s.records(p.Threats, principal(c)),
		"count":       len(p.Threats),
		"next_cursor": nextCursor(p.NextCursor),
		"since":       p.From.Format(time.RFC3339Nano),
		"until":       p.To.Format(time.RFC3339Nano),
	})
}

// queryByUsername is GET /query-by-username.
func (s *Server) queryByUsername(c *echo.Context) error {
	qs, err := queryValues(c)
	if err != nil {
		return err
	}
	if err := onlyParams(qs, []string{"username", "cursor", "limit"}); err != nil {
		return err
	}
	p, err := s.paid.ByPublisher(c.Request().Context(), principal(c), qs.Get("username"), qs.Get("cursor"), qs.Get("limit"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{
		"username":    qs.Get("username"),
		"threats":     s.records(p.Threats, principal(c)),
		"count":       len(p.Threats),
		"next_cursor": nextCursor(p.NextCursor),
	})
}

// threatData is GET /threat-data: the full record, its revisions and review
// history, and every indicator of compromise.
func (s *Server) threatData(c *echo.Context) error {
	qs, err := queryValues(c)
	if err != nil {
		return err
	}
	if err := onlyParams(qs, []string{"threat_id"}); err != nil {
		return err
	}
	if qs.Get("threat_id") == "" {
		return core.Invalid("threat_id", "is required")
	}
	d, err := s.paid.Data(c.Request().Context(), principal(c), qs.Get("threat_id"))
	if err != nil {
		return err
	}
	type revisionSummary struct {
		Number    int        `json:"number"`
		State     string     `json:"state"`
		Author    string     `json:"author"`
		CreatedAt time.Time  `json:"created_at"`
		DecidedAt *time.Time `json:"decided_at"`
		DecidedBy *string    `json:"decided_by"`
		Fields    []string   `json:"fields"`
		Note      *string    `json:"note"`
	}
	type event struct {
		Action string    `json:"action"`
		From   *string   `json:"from"`
		To     *string   `json:"to"`
		Actor  string    `json:"actor"`
		At     time.Time `json:"at"`
		Note   *string   `json:"note"`
	}
	revs := make([]revisionSummary, 0, len(d.Revisions))
	for _, r := range d.Revisions {
		revs = append(revs, revisionSummary{Number: r.Number, State: r.State, Author: r.AuthorName, CreatedAt: r.CreatedAt,
			DecidedAt: r.DecidedAt, DecidedBy: nullable(r.DecidedBy), Fields: core.PatchFields(r.Patch), Note: nullable(r.Note)})
	}
	events := make([]event, 0, len(d.Events))
	for _, e := range d.Events {
		events = append(events, event{Action: e.Action, From: nullable(string(e.From)), To: nullable(string(e.To)),
			Actor: e.ActorName, At: e.At, Note: nullable(e.Note)})
	}
	iocs := d.Threat.IOCs
	if iocs == nil {
		iocs = []ioc.IOC{}
	}
	return c.JSON(http.StatusOK, map[string]any{
		"threat":         s.toRecord(d.Threat, principal(c)),
		"revisions":      revs,
		"review_history": events,
		"iocs":           iocs,
	})
}
