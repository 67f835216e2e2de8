package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// healthz reports the daemon's and the storage plugin's health (no auth).
func (s *Server) healthz(c *echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	storage := map[string]any{"plugin": s.opts.StorageName, "status": "ok"}
	status, code := "ok", http.StatusOK
	ready, loaded, total := s.index.Progress()
	index := map[string]any{"verified_reports": s.index.Len(), "feed_seq": s.index.LastSeq(), "loaded": ready}
	if !ready {
		// Starting: the daemon answers, but checks wait for the index.
		status, code = "starting", http.StatusServiceUnavailable
		index["verified_reports"], index["progress"] = loaded, map[string]int64{"read": loaded, "stored_reports": total}
	}
	if err := s.store.Health(ctx); errors.Is(err, core.ErrCorrupt) {
		s.log.Error("healthz: THE DATABASE IS DAMAGED; restore it from a backup", "error", err.Error())
		storage["status"] = "corrupt"
		storage["error"] = "the database is damaged: restore it from a backup (details in the daemon's log)"
		status, code = "degraded", http.StatusServiceUnavailable
	} else if err != nil {
		// The cause is logged; the public answer names no internals.
		s.log.Warn("healthz: storage is not answering", "error", err.Error())
		storage["status"] = "unavailable"
		storage["error"] = "storage is not answering (restarting, or its database is unreachable)"
		status, code = "degraded", http.StatusServiceUnavailable
	}
	if why := s.index.SpillFailure(); why != "" {
		// The answers stay right (checks read storage); the operator is
		// told the cache is not being written, and why.
		index["spill"] = map[string]any{"status": "failing", "error": why}
		if status == "ok" {
			status = "warning"
		}
	}
	plugins := map[string]any{"storage": storage}
	if st, ok := s.exporters.(interface{ States() map[string]string }); ok {
		exporters := map[string]any{}
		for name, state := range st.States() {
			exporters[name] = map[string]any{"status": state}
		}
		plugins["exporters"] = exporters
	}
	return c.JSON(code, map[string]any{
		"status":         status,
		"version":        s.opts.Version,
		"uptime_seconds": int64(time.Since(s.started).Seconds()),
		"plugins":        plugins,
		"index":          index,
	})
}

// livez answers 200 while the process serves HTTP at all (no auth): a
// liveness probe restarts the daemon only when this fails.
func (s *Server) livez(c *echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when the daemon can answer every endpoint: storage
// answers, the index of verified reports is loaded, and each configured
// exporter is started; 503 naming what is not (no auth). Failures are
// named, never explained: the causes are in the log and /healthz.
func (s *Server) readyz(c *echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{"storage": "ok", "index": "loaded"}
	ready := true
	if err := s.store.Health(ctx); errors.Is(err, core.ErrCorrupt) {
		checks["storage"], ready = "corrupt", false
	} else if err != nil {
		checks["storage"], ready = "unavailable", false
	}
	if loaded, _, _ := s.index.Progress(); !loaded {
		checks["index"], ready = "loading", false
	}
	if st, ok := s.exporters.(interface{ States() map[string]string }); ok {
		for name, state := range st.States() {
			checks["exporter:"+name] = state
			if state != "ready" {
				ready = false
			}
		}
	}
	if !ready {
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"status": "not ready", "checks": checks})
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}

// account describes the caller: who the token belongs to, its tier, role and
// limits. It lets a client check a token without side effects.
func (s *Server) account(c *echo.Context) error {
	p := principal(c)
	var perHour any
	if p.User.SubmissionsPerHour != nil {
		perHour = *p.User.SubmissionsPerHour
	}
	usage, err := s.usage.Today(c.Request().Context(), p.Token.ID)
	if err != nil {
		return err
	}
	rep, err := community.ReputationOf(c.Request().Context(), s.store, p.User.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{
		"points":           rep.Points,
		"verified":         rep.Verified,
		"rejected":         rep.Rejected,
		"duplicates":       rep.Duplicates,
		"paid_calls_today": usage,
		"email":            p.User.Email,
		"name":             p.User.Name,
		"tier":             p.User.Tier,
		"role":             p.User.Role,
		"token": map[string]any{
			"id":         p.Token.ID,
			"name":       p.Token.Name,
			"hint":       p.Token.Hint,
			"created_at": p.Token.CreatedAt,
		},
		"limits": map[string]any{
			"requests_per_minute":           s.opts.PerTokenPerMinute[p.User.Tier],
			"submissions_per_hour_override": perHour,
		},
	})
}
