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
	"github.com/threatd/threatd/core/ioc"
)

// planRecords are n imported records as the OSV source makes them.
func planRecords(n int) []core.ImportRecord {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]core.ImportRecord, n)
	for i := range recs {
		eco := []string{core.RegistryNPM, core.RegistryPyPI}[i%2]
		name := fmt.Sprintf("plan-pkg-%06d", i)
		published, modified := base.Add(time.Duration(i)*time.Minute), base.Add(time.Duration(i)*time.Minute+time.Hour)
		recs[i] = core.ImportRecord{Threat: core.Threat{
			ReportType: core.TypePackage, ResourceIdentifier: name, Registry: eco, CanonicalKey: "package:" + eco + ":" + name,
			Source: "osv", UpstreamID: fmt.Sprintf("MAL-PLAN-%06d", i), UpstreamModified: &modified, VerifiedAt: &published, AllVersions: true,
			Details: core.Details{ThreatDescription: "Malicious code in " + name, PayloadDescription: "Exfiltrates credentials.", Tags: []string{"malicious-package"}},
		}}
		if i%100 == 0 { // a few with a severity, as among real reports
			recs[i].Threat.Details.SeverityLevel = core.SeverityHigh
		}
	}
	return recs
}

// explain returns SQLite's query plan of q, one line per step.
func explain(t *testing.T, s *Store, q string) string {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q)
	if err != nil {
		t.Fatalf("explain %s: %v", q, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}

// At 50,000 verified reports, the statements that run per import batch and
// at start-up are bounded and read indexes: a re-import batch is two
// index look-ups (no scan of threats), the index load is one query whatever
// the number of reports, and query-latest reads a bounded index range with
// no sort. Full scans per batch made the import quadratic before.
func TestQueryPlansAtScale(t *testing.T) {
	const n = 50_000
	ctx := context.Background()
	s, err := Open(SQLite, filepath.Join(t.TempDir(), "plans.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	recs := planRecords(n)
	for i := 0; i < n; i += 500 {
		if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs[i : i+500], Actor: "osv-import"}); err != nil {
			t.Fatal(err)
		}
	}
	log := &queryLog{}
	s.hooks.add(log)

	// A second import of a batch: unchanged, decided from one look-up of
	// the batch's upstream ids and one of its keys; nothing is written.
	out, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs[20_000:20_500], Actor: "osv-import"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Result != core.ImportUnchanged {
			t.Fatalf("re-import: %+v", o)
		}
	}
	var selects []string
	for _, q := range log.take() {
		switch {
		case strings.HasPrefix(q, "SELECT"):
			selects = append(selects, q)
		case q == "BEGIN" || q == "COMMIT":
		default:
			t.Errorf("re-import of an unchanged batch ran %.80s", q)
		}
	}
	if len(selects) != 2 {
		t.Fatalf("re-import batch ran %d selects, want 2", len(selects))
	}
	for _, q := range selects {
		// Each is a search of the unique index it is written for; a search of
		// threats_status_verified_idx (status=?) reads every verified report.
		plan := explain(t, s, q)
		if strings.Contains(plan, "SCAN") || !strings.Contains(plan, "threats_upstream_key (source=? AND upstream_id=?)") &&
			!strings.Contains(plan, "threats_live_key (canonical_key=?)") {
			t.Errorf("per-batch look-up does not search its unique index: %s\n%.120s", plan, q)
		}
	}
	log.take()

	// Before decoding a re-import window, the source asks which records are
	// imported at their version: one search of threats_upstream_key.
	ids := make([]string, 0, 256)
	for _, r := range recs[30_000:30_256] {
		ids = append(ids, r.Threat.UpstreamID)
	}
	versions, err := s.ImportedVersions(ctx, core.VersionQuery{Source: "osv", IDs: ids})
	if err != nil || len(versions) != 256 {
		t.Fatalf("ImportedVersions: %d of 256, %v", len(versions), err)
	}
	if q := log.take(); len(q) != 1 {
		t.Errorf("ImportedVersions ran %d statements, want 1", len(q))
	} else if plan := explain(t, s, q[0]); strings.Contains(plan, "SCAN") || !strings.Contains(plan, "threats_upstream_key (source=? AND upstream_id=?)") {
		t.Errorf("ImportedVersions does not search threats_upstream_key: %s", plan)
	}

	// A first import batch at this size: the same two look-ups, then
	// multi-row inserts (a bounded number of statements, not one per record),
	// the published changes last (the last one's time, one insert).
	fresh := planRecords(n + 500)[n:]
	if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: fresh, Actor: "osv-import"}); err != nil {
		t.Fatal(err)
	}
	qs := log.take()
	// (14: the last two are the STIX object ids and the indicators of the
	// new reports.)
	if len(qs) > 14 {
		t.Errorf("a new batch of 500 ran %d statements, want at most 14", len(qs))
	}
	for _, q := range qs {
		if strings.Contains(q, "feed_events") && strings.HasPrefix(q, "SELECT") {
			if plan := explain(t, s, q); !strings.Contains(plan, "feed_events_at_idx") || strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("the last published change: plan %s", plan)
			}
		}
	}
	log.take()

	// Start-up: the index load streams every verified report through one query.
	count := 0
	if err := s.EachVerifiedSummary(ctx, func(b []core.Summary) error { count += len(b); return nil }); err != nil {
		t.Fatal(err)
	}
	q := log.take()
	if count != n+500 || len(q) != 1 {
		t.Fatalf("index load: %d summaries in %d statements, want %d in 1", count, len(q), n+500)
	}
	// One pass over threats in storage order (through the status index it
	// costs a row look-up per report); details only by primary key, and
	// only for reports that do not affect every version.
	plan := explain(t, s, q[0])
	log.take()
	if !strings.Contains(plan, "SCAN t") || strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN d") {
		t.Errorf("index load: plan %s", plan)
	}

	// query-latest, overall and per ecosystem, type and severity: a bounded
	// read in index order (no sort of the verified reports).
	for _, f := range []core.LatestFilter{{Limit: 100}, {Registry: core.RegistryPyPI, Limit: 100},
		{ReportType: core.TypePackage, Limit: 100}, {Severity: core.SeverityHigh, Limit: 100}} {
		got, err := s.LatestVerified(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		qs := log.take()
		if len(qs) != 1 {
			t.Fatalf("latest %+v ran %d statements", f, len(qs))
		}
		plan := explain(t, s, qs[0])
		log.take() // the EXPLAIN itself
		if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN threat_row") {
			t.Errorf("latest %+v: plan %s", f, plan)
		}
		if len(got) != 100 {
			t.Errorf("latest %+v: %d reports", f, len(got))
		}
	}

	// The web site's browsing: each page of /threats under each filter, in
	// both orders, from a keyset position, is a bounded read in index order
	// (no sort of the verified reports); its total is a count over an
	// index; the package-name prefix search is a range of the verified-key
	// index; the indicator look-up is a search of its primary key.
	midReport := recs[n/2].Threat
	for _, q := range []core.ThreatQuery{{}, {Registry: core.RegistryPyPI}, {ReportType: core.TypePackage},
		{Severity: core.SeverityHigh}, {ReportType: core.TypePackage, Registry: core.RegistryNPM}} {
		for _, desc := range []bool{false, true} {
			q := q
			q.Limit, q.Descending = 51, desc
			first, err := s.QueryThreats(ctx, q)
			if err != nil || len(first) == 0 {
				t.Fatalf("browse %+v: %d, %v", q, len(first), err)
			}
			log.take()
			if len(first) > 0 {
				q.AfterVerifiedAt, q.AfterID = *first[len(first)-1].VerifiedAt, first[len(first)-1].ID
			}
			if _, err := s.QueryThreats(ctx, q); err != nil {
				t.Fatal(err)
			}
			qs := log.take()
			plan := explain(t, s, qs[0])
			log.take()
			if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN threat_row") && !strings.Contains(plan, "USING INDEX") ||
				q.Severity != "" && !strings.Contains(plan, "threats_severity_verified_idx") {
				t.Errorf("browse %+v: plan %s", q, plan)
			}
			if _, err := s.CountThreats(ctx, q); err != nil {
				t.Fatal(err)
			}
			qs = log.take()
			plan = explain(t, s, qs[0])
			log.take()
			if strings.Contains(plan, "SCAN threat_row") && !strings.Contains(plan, "COVERING INDEX") {
				t.Errorf("count %+v: plan %s", q, plan)
			}
		}
	}
	key, _ := core.CanonicalKey(midReport.ReportType, midReport.Registry, midReport.ResourceIdentifier)
	if got, err := s.ThreatsByKeyPrefix(ctx, core.KeyPrefixQuery{Prefixes: []string{key[:len(key)-2], "package:pypi:a", "package:rubygems:a"}, After: "", Limit: 20}); err != nil || len(got) == 0 {
		t.Fatalf("prefix %q: %d, %v", key[:len(key)-2], len(got), err)
	}
	// Each range read from the key index in key order and cut at the limit:
	// no sort (the at most 20 keys of each range are merged by the store).
	if qs := log.take(); len(qs) < 1 {
		t.Fatal("no prefix query")
	} else if plan := explain(t, s, qs[0]); strings.Count(plan, "threats_verified_key_idx (canonical_key>? AND canonical_key<?)") != 3 ||
		strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN t;") {
		t.Errorf("prefix search: plan %s", plan)
	} else {
		t.Logf("prefix search: plan %s", plan)
	}
	log.take()
	for _, q := range []core.ThreatQuery{{IndicatorKey: ioc.Key(ioc.Domain, "exfil.example.net"), Descending: true, Limit: 20}} {
		if _, err := s.QueryThreats(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CountThreats(ctx, q); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range log.take() {
			if plan := explain(t, s, stmt); !strings.Contains(plan, "key=?") || strings.Contains(plan, "SCAN threat_row") {
				t.Errorf("indicator look-up: plan %s", plan)
			}
		}
		log.take()
	}

	// The feeds: a page of published changes from a position, overall, per
	// ecosystem, per kind, and of the plain feed, is a bounded read of a
	// feed_events index in (at, seq) order; the reports are then read by
	// primary key.
	last, err := s.LastFeedEvent(ctx, time.Time{})
	if err != nil || last.Seq == 0 {
		t.Fatalf("last change: %+v %v", last, err)
	}
	if q := log.take(); len(q) != 1 {
		t.Fatalf("LastFeedEvent ran %d statements", len(q))
	} else if plan := explain(t, s, q[0]); strings.Contains(plan, "TEMP B-TREE") || !strings.Contains(plan, "feed_events_at_idx") {
		t.Errorf("LastFeedEvent: plan %s", plan)
	}
	log.take()
	from := last.At.Add(-time.Hour)
	// A position in the window with more than a page after it.
	first, err := s.Feed(ctx, core.FeedQuery{From: from, Limit: 1})
	if err != nil || len(first) != 1 {
		t.Fatalf("first change in the window: %v %v", first, err)
	}
	mid := first[0].Event
	log.take()
	for _, fq := range []core.FeedQuery{{From: from, To: last.At.Add(time.Second), Limit: 101},
		{From: from, To: last.At.Add(time.Second), AfterAt: mid.At, AfterSeq: mid.Seq, Limit: 101},
		{From: from, Registry: core.RegistryPyPI, Limit: 101}, {From: from, Kind: core.ChangeWithdrawn, Limit: 101},
		{From: from, Published: true, Limit: 101},
		// TAXII: a collection's page, each report at its latest change,
		// from the start, after a position, per ecosystem, and by object id.
		{Latest: true, Limit: 101}, {Latest: true, From: from, AfterAt: mid.At, AfterSeq: mid.Seq, Limit: 101},
		{Latest: true, Registry: core.RegistryPyPI, From: from, Limit: 101},
		{Latest: true, ObjectIDs: []string{core.STIXIDsOf(last.ThreatID, false).Malware()}, Limit: 101}} {
		items, err := s.Feed(ctx, fq)
		if err != nil {
			t.Fatal(err)
		}
		qs := log.take()
		if len(fq.ObjectIDs) > 0 {
			// The reports of the object ids first: the listed ids by the
			// primary key of stix_objects, the derived ones by a range of
			// the reports' primary key.
			if len(qs) != 3 || len(items) != 1 || items[0].Threat.ID != last.ThreatID {
				t.Fatalf("feed %+v ran %d statements, found %d changes", fq, len(qs), len(items))
			}
			for i, want := range []string{"sqlite_autoindex_stix_objects_1 (object_id=?)", "sqlite_autoindex_threats_1 (id>? AND id<?)"} {
				if plan := explain(t, s, qs[i]); !strings.Contains(plan, want) || strings.Contains(plan, "SCAN") {
					t.Errorf("reports of object ids, statement %d: plan %s", i, plan)
				}
			}
			qs = qs[2:]
		}
		// The reports' read (GetThreats, a raw statement by primary key)
		// is not seen by the hook.
		if len(qs) != 1 {
			t.Fatalf("feed %+v ran %d statements, want 1", fq, len(qs))
		}
		plan := explain(t, s, qs[0])
		log.take()
		t.Logf("feed %+v: %s", fq, plan)
		switch {
		case len(fq.ObjectIDs) > 0:
			// A few reports by object id: their changes by threat_id, sorted
			// (a handful of rows).
			if !strings.Contains(plan, "feed_events_threat_idx (threat_id=?)") || strings.Contains(plan, "SCAN") {
				t.Errorf("feed %+v: plan %s", fq, plan)
			}
		case strings.Contains(plan, "TEMP B-TREE") || !strings.Contains(plan, "feed_events_"):
			t.Errorf("feed %+v: plan %s", fq, plan)
		case strings.Contains(plan, "SCAN feed_event_row") && !(fq.Latest && fq.From.IsZero() && strings.Contains(plan, "SCAN feed_event_row USING INDEX feed_events_at_idx")):
			// Only a collection read from its start walks the (at, seq)
			// index from its first entry, stopping at the limit.
			t.Errorf("feed %+v: plan %s", fq, plan)
		case fq.Latest && !strings.Contains(plan, "feed_events_threat_idx (threat_id=? AND seq>?)"):
			t.Errorf("feed %+v: a later change is not looked up by index: %s", fq, plan)
		}
		if fq.Kind == "" && len(fq.ObjectIDs) == 0 && len(items) != 101 {
			t.Errorf("feed %+v: %d changes", fq, len(items))
		}
	}

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
	hook, err := core.NewWebhook("https://siem.example.com/hook", nil, "", "plans", time.Now(), false)
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
	due, err := s.DueDeliveries(ctx, core.DueQuery{Now: time.Now().Add(time.Hour), Limit: 100})
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
	if err := s.CreateCampaign(ctx, core.Campaign{ID: campaignID, Name: "plans", ThreatIDs: members, CreatedAt: now, UpdatedAt: now, CreatedBy: "plans"}); err != nil {
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
	var batch []core.Sighting
	for i, id := range members {
		sg, err := core.NewSighting(core.SightingRequest{Type: []string{core.SightingSeen, core.SightingExpired}[i%2]}, id, "", now)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, sg, sg)
		batch[len(batch)-1].ID = uuid.NewString()
	}
	if out, err := s.AddSightings(ctx, core.SightingBatch{Sightings: batch}); err != nil || len(out) != len(batch) || out[0] != core.SightingAdded {
		t.Fatalf("AddSightings: %v %v", out, err)
	}
	qs = log.take()
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
	got, err := s.SightingCountsPage(ctx, core.SightingCountsQuery{Since: since, Limit: 5000})
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
