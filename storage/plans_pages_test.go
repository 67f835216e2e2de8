package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/core/webhooks"
)

// pagePlans is the second half of TestQueryPlansAtScale: the plans of
// what the web site, the feeds, webhooks, campaigns and sightings read
// per page or per batch, on its store of n reports (recs imported).
func pagePlans(t *testing.T, ctx context.Context, s *Store, log *queryLog, recs []core.ImportRecord, n int) {
	// The web site, per page: a session by its hash (primary key), and a
	// page of a user's submissions in (submitter_id, created_at) order.
	submitter := "0196a1b2-0000-7000-8000-000000000000"
	if _, err := s.SessionUser(ctx, strings.Repeat("a", 64)); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("SessionUser: %v", err)
	}
	sl, err := s.ListSubmissions(ctx, core.SubmissionQuery{UserID: submitter, Offset: 25, Limit: 25})
	page, total := sl.Threats, sl.Total
	if err != nil || len(page) != 0 || total != 0 {
		t.Fatalf("ListSubmissions: %d of %d, %v", len(page), total, err)
	}
	for _, q := range log.take() {
		if !strings.HasPrefix(q, "SELECT") {
			continue
		}
		plan := explain(t, s, q)
		t.Logf("web: %.60s: %s", q, plan)
		if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN threat_row") || strings.Contains(plan, "SCAN session_row") {
			t.Errorf("web page query %.100s: plan %s", q, plan)
		}
	}
	log.take()

	// The review queue (web and review list): a page of pending reports
	// after a position, and their count, read from the partial index of
	// pending reports, however many are verified.
	pendingAt := time.Now().UTC()
	if _, err := s.CreateUser(ctx, core.User{ID: submitter, Email: "queue@example.com", Name: "queue", Tier: core.TierFree, Role: core.RoleSubmitter}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		th, err := core.NewThreat(core.Submission{ReportType: ptrS(string(core.TypeDomain)), ResourceIdentifier: ptrS(fmt.Sprintf("pending-%d.example", i)),
			ThreatDescription: ptrS("pending")}, pendingAt)
		if err != nil {
			t.Fatal(err)
		}
		th.ID, th.Status, th.SubmitterID = uuid.NewString(), core.StatusPending, submitter
		th.CreatedAt, th.UpdatedAt = pendingAt.Add(time.Duration(i)*time.Millisecond), pendingAt
		if err := s.CreateThreat(ctx, core.SubmittedThreat{Threat: th, Policy: core.SubmitPolicy{}}); err != nil {
			t.Fatal(err)
		}
	}
	log.take()
	for _, q := range []core.PendingQuery{{Limit: 50}, {Limit: 50, AfterCreatedAt: pendingAt, AfterID: "0"}} {
		pl, err := s.ListPending(ctx, q)
		got, total := pl.Threats, pl.Total
		if err != nil || total != 3 || (q.AfterID == "" && len(got) != 3) {
			t.Fatalf("ListPending %+v: %d of %d, %v", q, len(got), total, err)
		}
		for _, stmt := range log.take() {
			plan := explain(t, s, stmt)
			t.Logf("review queue: %.60s: %s", stmt, plan)
			if strings.Contains(plan, "TEMP B-TREE") || !strings.Contains(plan, "threats_pending_idx") && !strings.Contains(plan, "threats_status_verified_idx (status=?)") ||
				strings.Contains(plan, "SCAN threat_row") && !strings.Contains(plan, "threats_pending_idx") {
				t.Errorf("review queue %.100s: plan %s", stmt, plan)
			}
		}
		log.take()
	}

	// Webhooks: with a subscription, a published batch queues its changes
	// by reading the batch's own range of feed_events (at ≥ its first
	// time), not the 50,000 changes before it; the delivery loop reads the
	// due deliveries through the partial index of pending ones.
	hook, err := webhooks.NewWebhook("https://siem.example.com/hook", nil, "", "plans", time.Now(), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateWebhook(ctx, hook); err != nil {
		t.Fatal(err)
	}
	log.take()
	if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: planRecords(n + 1000)[n+500:], Actor: "osv-import"}); err != nil {
		t.Fatal(err)
	}
	queued := 0
	for _, q := range log.take() {
		if !strings.HasPrefix(q, "INSERT INTO webhook_deliveries") {
			continue
		}
		queued++
		plan := explain(t, s, q)
		t.Logf("webhook fan-out: %s", plan)
		if !strings.Contains(plan, "feed_events_at_idx (at>?)") || strings.Contains(plan, "SCAN f") {
			t.Errorf("the fan-out reads more than the batch's changes: %s", plan)
		}
	}
	if queued != 1 {
		t.Fatalf("a batch queued its webhook events in %d statements, want 1", queued)
	}
	log.take() // the EXPLAINs above
	due, err := s.DueDeliveries(ctx, webhooks.DueQuery{Now: time.Now().Add(time.Hour), Limit: 100})
	if err != nil || len(due) != 100 {
		t.Fatalf("DueDeliveries: %d, %v", len(due), err)
	}
	for _, q := range log.take() {
		if !strings.Contains(q, "webhook_deliveries") {
			continue
		}
		plan := explain(t, s, q)
		t.Logf("due deliveries: %s", plan)
		if !strings.Contains(plan, "webhook_deliveries_due_idx") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("DueDeliveries does not read the due index in order: %s", plan)
		}
	}

	// Every daemon reads the campaigns' members every few seconds: a read
	// of the members, each checked verified by its key, not of the 50,000
	// verified reports (a join SQLite started from threats took 0.28 s at
	// 1M, every 5 s).
	latest, err := s.LatestVerified(ctx, core.LatestFilter{Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	members := make([]string, len(latest))
	for i, th := range latest {
		members[i] = th.ID
	}
	now := time.Now().UTC()
	log.take()
	// Making a campaign checks its reports verified, and reading one reads
	// its members: by their keys, never every verified report.
	campaignID := uuid.NewString()
	if err := s.CreateCampaign(ctx, community.Campaign{ID: campaignID, Name: "plans", ThreatIDs: members, CreatedAt: now, UpdatedAt: now, CreatedBy: "plans"}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.GetCampaign(ctx, campaignID); err != nil || len(c.ThreatIDs) != len(members) {
		t.Fatalf("GetCampaign: %d members, %v", len(c.ThreatIDs), err)
	}
	for _, q := range log.take() {
		if !strings.HasPrefix(q, "SELECT") {
			continue
		}
		if plan := explain(t, s, q); strings.Contains(plan, "threats_status_verified_idx") || strings.Contains(plan, "SCAN t") {
			t.Errorf("a campaign's statement reads the verified reports: %.100s: %s", q, plan)
		}
	}
	log.take()
	got, err := s.CampaignMembers(ctx)
	if err != nil || len(got) != len(members) {
		t.Fatalf("CampaignMembers: %d of %d, %v", len(got), len(members), err)
	}
	if q := log.take(); len(q) != 1 {
		t.Fatalf("CampaignMembers ran %d statements", len(q))
	} else if plan := explain(t, s, q[0]); strings.Contains(plan, "threats_status_verified_idx") || !strings.Contains(plan, "(id=?)") {
		t.Errorf("CampaignMembers reads the verified reports: %s", plan)
	}
	log.take()

	// A batch of sightings (2,000 a second at 1M reports): its reports
	// looked up by their keys, never the verified reports read through
	// their status index; a bounded number of statements.
	var batch []community.Sighting
	for i, id := range members {
		sg, err := community.NewSighting(community.SightingRequest{Type: []string{community.SightingSeen, community.SightingExpired}[i%2]}, id, "", now)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, sg, sg)
		batch[len(batch)-1].ID = uuid.NewString()
	}
	if out, err := s.AddSightings(ctx, community.SightingBatch{Sightings: batch}); err != nil || len(out) != len(batch) || out[0] != community.SightingAdded {
		t.Fatalf("AddSightings: %v %v", out, err)
	}
	qs := log.take()
	if len(qs) > 6 {
		t.Errorf("a batch of %d sightings ran %d statements, want at most 6 (BEGIN, look-up, sightings, counts, COMMIT)", len(batch), len(qs))
	}
	for _, q := range qs {
		if !strings.HasPrefix(q, "SELECT") {
			continue
		}
		if plan := explain(t, s, q); strings.Contains(plan, "SCAN") || strings.Contains(plan, "threats_status_verified_idx") {
			t.Errorf("a batch of sightings reads more than its reports: %.100s: %s", q, plan)
		}
	}

	// Every report attributed to a source user: the submitters' records
	// read the index around its range, never its 50,000 reports.
	src, err := core.SourceUser(ctx, s, "osv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE threats SET submitter_id = ? WHERE source = 'osv'", src.ID); err != nil {
		t.Fatal(err)
	}
	log.take()
	if recs, err := s.SubmitterRecordsAll(ctx); err != nil {
		t.Fatal(err)
	} else {
		for _, r := range recs {
			if r.UserID == src.ID {
				t.Errorf("the source user's record was read: %+v", r)
			}
		}
	}
	qs = log.take()
	ranges := 0
	for _, q := range qs {
		if !strings.Contains(q, "GROUP BY") {
			continue
		}
		ranges++
		if plan := explain(t, s, q); !strings.Contains(plan, "threats_submitter_status_idx (submitter_id") || !strings.Contains(plan, "submitter_id<?") && !strings.Contains(plan, "submitter_id>?") {
			t.Errorf("the submitters' records do not read around the source user's range: %.200s: %s", q, plan)
		}
	}
	if ranges != 2 {
		t.Errorf("%d ranges read around one source user, want 2: %q", ranges, qs)
	}
	// --full pages through a source's upstream ids on threats_upstream_key.
	log.take()
	if ids, err := s.ImportedIDs(ctx, core.ImportedIDQuery{Source: "osv", After: recs[100].Threat.UpstreamID, Limit: core.MaxImportedVersions}); err != nil || len(ids) != core.MaxImportedVersions {
		t.Fatalf("ImportedIDs: %d %v", len(ids), err)
	}
	if q := log.take(); len(q) != 1 {
		t.Errorf("ImportedIDs ran %d statements: %q", len(q), q)
	} else if plan := explain(t, s, q[0]); !strings.Contains(plan, "threats_upstream_key (source=? AND upstream_id>?)") || strings.Contains(plan, "TEMP B-TREE") {
		t.Errorf("ImportedIDs does not page threats_upstream_key: %s", plan)
	}
	// The Suricata rules' numbers: a search of the unique index on indicator.
	if _, err := s.RuleIDs(ctx, core.RuleIDQuery{Rules: []core.RuleBasis{{Indicator: "domain:a.example", Basis: "t:1"}}}); err != nil {
		t.Fatal(err)
	}
	log.take()
	if _, err := s.RuleIDs(ctx, core.RuleIDQuery{Rules: []core.RuleBasis{{Indicator: "domain:a.example", Basis: "t:1"}, {Indicator: "ip:192.0.2.1", Basis: "t:1"}}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range log.take() {
		if strings.HasPrefix(q, "SELECT") {
			if plan := explain(t, s, q); strings.Contains(plan, "SCAN") || !strings.Contains(plan, "(indicator=?)") {
				t.Errorf("RuleIDs does not search its unique index: %s", plan)
			}
		}
	}
}

// Every daemon re-reads the sighting counts changed in the last seconds
// once a poll: at 100,000 sighted reports that is a range of the index on
// updated_at (a few rows), never a scan of the counts.
func TestSightingCountsPlan(t *testing.T) {
	ctx := context.Background()
	s, err := Open(SQLite, filepath.Join(t.TempDir(), "counts.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rows := make([]sightingCountRow, 0, 1000)
	for i := range n {
		at := base.Add(time.Duration(i) * time.Minute)
		rows = append(rows, sightingCountRow{ThreatID: uuid.NewString(), Seen: int64(i), LastSeen: &at, UpdatedAt: &at})
		if len(rows) == cap(rows) {
			if _, err := s.db.NewInsert().Model(&rows).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	log := &queryLog{}
	s.hooks.add(log)
	since := base.Add((n - 10) * time.Minute)
	got, err := s.SightingCountsPage(ctx, community.SightingCountsQuery{Since: since, Limit: 5000})
	if err != nil || len(got) != 10 {
		t.Fatalf("changed since: %d rows, %v", len(got), err)
	}
	q := log.take()
	if len(q) != 1 {
		t.Fatalf("%d statements", len(q))
	}
	if plan := explain(t, s, q[0]); !strings.Contains(plan, "sighting_counts_updated_idx (updated_at>?)") || strings.Contains(plan, "SCAN") {
		t.Errorf("changed counts: plan %s", plan)
	}
}
