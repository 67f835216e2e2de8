package web

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// queue is the review queue: pending reports and pending revisions.
func (s *Site) queue(c *echo.Context) error {
	ctx := c.Request().Context()
	// One keyset page of queuePage reports at a time, oldest first: after=
	// names the last report of the page before (its created_at in
	// microseconds and its id), so a page is the same whatever is decided
	// meanwhile, and every pending report can be reached.
	q := core.PendingQuery{Limit: queuePage}
	if after := c.QueryParam("after"); after != "" {
		var ok bool
		if q.AfterCreatedAt, q.AfterID, ok = parseCursor(after); !ok {
			return s.errorPage(c, http.StatusBadRequest, "This page of the review queue does not exist: start again from the first page.")
		}
	}
	pl, err := s.store.ListPending(ctx, q)
	pending, total := pl.Threats, pl.Total
	if err != nil {
		return err
	}
	next := ""
	if len(pending) == queuePage {
		last := pending[len(pending)-1]
		next = cursor(last.CreatedAt, last.ID)
	}
	revs, err := s.store.ListPendingRevisions(ctx)
	if err != nil {
		return err
	}
	type pendingRevision struct {
		revisionView
		Threat core.Threat
	}
	// The revisions' reports in one storage call.
	var ids []string
	for _, r := range revs {
		if !slices.Contains(ids, r.ThreatID) {
			ids = append(ids, r.ThreatID)
		}
	}
	byID := map[string]core.Threat{}
	for chunk := range slices.Chunk(ids, core.MaxGetThreats) {
		ts, err := s.store.GetThreats(ctx, chunk)
		if err != nil {
			return err
		}
		for _, t := range ts {
			byID[t.ID] = t
		}
	}
	var prs []pendingRevision
	for _, r := range revs {
		t := byID[r.ThreatID]
		prs = append(prs, pendingRevision{revisionOf(t, r), t})
	}
	// Each submitter's record, in one storage call.
	var submitters []string
	for _, t := range pending {
		if t.SubmitterID != "" && !slices.Contains(submitters, t.SubmitterID) {
			submitters = append(submitters, t.SubmitterID)
		}
	}
	records := map[string]core.SubmitterRecord{}
	if len(submitters) > 0 {
		recs, err := s.store.SubmitterRecords(ctx, submitters)
		if err != nil {
			return err
		}
		for _, r := range recs {
			records[r.UserID] = r
		}
	}
	// The findings of the reports package analysis filed, in one call.
	pendingIDs := make([]string, len(pending))
	for i, t := range pending {
		pendingIDs[i] = t.ID
	}
	analyses, err := s.analysesOf(ctx, pendingIDs)
	if err != nil {
		return err
	}
	views := make([]map[string]any, len(pending))
	for i, t := range pending {
		rec, known := records[t.SubmitterID]
		views[i] = map[string]any{"T": t, "Payload": s.markdown(t.Details.PayloadDescription), "Evidence": splitPipes(t.Details.EvidenceReferences),
			"IOCs": t.IOCs, "Versions": core.AffectedVersions(t), "Submitter": rec, "KnownSubmitter": known}
		if a, ok := analyses[t.ID]; ok {
			views[i]["Analysis"] = a
		}
	}
	// The oldest disputes, with the votes counted in each.
	dl, err := s.store.ListDisputed(ctx, community.DisputeQuery{Limit: queuePage})
	if err != nil {
		return err
	}
	disputed := make([]map[string]any, len(dl.Threats))
	for i, t := range dl.Threats {
		votes, err := s.store.DisputeVotes(ctx, t.ID)
		if err != nil {
			return err
		}
		disputed[i] = map[string]any{"T": t, "Votes": votes}
	}
	return s.render(c, http.StatusOK, "queue", map[string]any{"Title": "Review queue", "Pending": views, "Revisions": prs,
		"PendingTotal": total, "NextPage": next, "Paged": q.AfterID != "", "Disputed": disputed, "DisputedTotal": dl.Total})
}

// decide is Verify or Reject on a pending (or, to withdraw, verified)
// report, pinned to the version the reviewer saw.
func (s *Site) decide(c *echo.Context) error {
	ctx := c.Request().Context()
	f, _ := c.FormValues()
	var d core.Decision
	switch f.Get("decision") {
	case "verify":
		d = core.DecisionVerify
	case "reject":
		d = core.DecisionReject
	case "keep":
		d = core.DecisionKeep
	default:
		return s.errorPage(c, http.StatusBadRequest, "decision: must be verify, reject or keep")
	}
	version, err := strconv.Atoi(f.Get("version"))
	if err != nil || version < 1 {
		return s.errorPage(c, http.StatusBadRequest, "version: the form did not say which version you reviewed")
	}
	u := viewerOf(c).User
	t, err := s.reports.Decide(ctx, c.Param("id"), version, d, strings.TrimSpace(f.Get("note")), &u)
	if err != nil {
		return s.decisionError(c, err)
	}
	if err := s.sync(ctx); err != nil {
		s.log.Warn("web: the decision will show within cache.freshness", "error", err.Error())
	}
	s.setFlash(c, "ok", fmt.Sprintf("Done: %s %s is %s.", t.ReportType, t.ResourceIdentifier, t.Status))
	return c.Redirect(http.StatusSeeOther, "/review")
}

func (s *Site) decideRevision(c *echo.Context) error {
	ctx := c.Request().Context()
	f, _ := c.FormValues()
	approve := f.Get("decision") == "approve"
	if !approve && f.Get("decision") != "reject" {
		return s.errorPage(c, http.StatusBadRequest, "decision: must be approve or reject")
	}
	u := viewerOf(c).User
	_, r, err := s.reports.DecideRevision(ctx, c.Param("id"), approve, strings.TrimSpace(f.Get("note")), &u)
	if err != nil {
		return s.decisionError(c, err)
	}
	if err := s.sync(ctx); err != nil {
		s.log.Warn("web: the decision will show within cache.freshness", "error", err.Error())
	}
	s.setFlash(c, "ok", fmt.Sprintf("Done: revision %d is %s.", r.Number, r.State))
	return c.Redirect(http.StatusSeeOther, "/review")
}

// decisionError sends the reviewer back to the queue with the reason.
func (s *Site) decisionError(c *echo.Context, err error) error {
	var fe *core.FieldError
	switch {
	case errors.As(err, &fe), errors.Is(err, core.ErrConflict), errors.Is(err, core.ErrStale), errors.Is(err, core.ErrNotFound), errors.Is(err, core.ErrForbidden):
		s.setFlash(c, "error", "Not done: "+err.Error())
		return c.Redirect(http.StatusSeeOther, "/review")
	}
	return err
}
