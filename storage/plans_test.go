package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

	pagePlans(t, ctx, s, log, recs, n)
}
