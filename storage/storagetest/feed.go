package storagetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/port"
)

// feedAll reads every published change after a position, page by page.
func feedAll(t *testing.T, s port.Store, q core.FeedQuery) []core.FeedItem {
	t.Helper()
	var out []core.FeedItem
	q.Limit = 2
	for {
		page, err := s.Feed(ctx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < q.Limit {
			return out
		}
		last := page[len(page)-1].Event
		q.AfterAt, q.AfterSeq = last.At, last.Seq
	}
}

// The published changes: a verification, an approved revision and a
// withdrawal by reviewers, and an import, an upstream update and an
// upstream withdrawal, each once, in commit order with times that never go
// back; pending reports and their edits publish nothing. The plain feed
// lists the reports that became visible and are still verified.
func testFeed(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "feed@example.com")
	community := report(t, u.ID, core.TypePackage, core.RegistryNPM, "feed-community")
	pending := report(t, u.ID, core.TypeDomain, "", "feed-pending.example.com")
	for _, th := range []core.Threat{community, pending} {
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
			t.Fatal(err)
		}
	}
	// An owner's edit of a pending report is not published.
	if _, _, err := modifyThreat(c, s, core.Modification{ThreatID: pending.ID, AuthorID: u.ID, AuthorName: u.Name,
		Patch: core.Patch{Submission: core.Submission{Publisher: ptr("x")}}, At: now()}, noLimits); err != nil {
		t.Fatal(err)
	}
	verify(t, s, community.ID, now())
	_, rev, err := modifyThreat(c, s, core.Modification{ThreatID: community.ID, AuthorID: "", AuthorName: "Olga",
		Patch: core.Patch{Submission: core.Submission{SeverityLevel: ptr("high")}}, BaseRevision: 0, At: now()}, noLimits)
	if err != nil || rev.State != core.RevisionPending {
		t.Fatalf("proposal: %+v %v", rev, err)
	}
	if _, _, err := decideRevision(c, s, core.RevisionDecision{RevisionID: rev.ID, Approve: true, ActorName: "Rita", At: now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: community.ID, Decision: core.DecisionReject, Note: "false positive", ActorName: "Rita", At: now()}); err != nil {
		t.Fatal(err)
	}
	// Imports: new, updated, withdrawn upstream.
	up := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	imp := report(t, "", core.TypePackage, core.RegistryPyPI, "feed-imported")
	imp.Source, imp.UpstreamID, imp.UpstreamModified = "osv", "MAL-FEED-1", &up
	imp.VerifiedAt = &up // the upstream publication time
	for i, rec := range []core.ImportRecord{{Threat: imp}, {Threat: imp}, {Threat: imp, Withdrawn: true}} {
		later := up.Add(time.Duration(i) * time.Hour)
		rec.Threat.UpstreamModified = &later
		if out, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{rec}, Actor: "osv-import"}); err != nil || len(out) != 1 {
			t.Fatalf("import %d: %+v %v", i, out, err)
		}
	}
	all := feedAll(t, s, core.FeedQuery{})
	var got []string
	for i, it := range all {
		got = append(got, it.Threat.ResourceIdentifier+" "+it.Event.Kind+fmt.Sprint(" v", it.Event.Version))
		// Each change has its own time (TAXII's date_added), later than
		// the one before.
		if i > 0 && (!it.Event.At.After(all[i-1].Event.At) || it.Event.Seq <= all[i-1].Event.Seq) {
			t.Fatalf("change %d does not come after the one before: %+v after %+v", i, it.Event, all[i-1].Event)
		}
		if it.Event.ThreatID != it.Threat.ID || it.Event.At.Year() < 2026 {
			t.Fatalf("change %d: %+v for %s", i, it.Event, it.Threat.ID)
		}
	}
	want := []string{"feed-community verified v1", "feed-community revised v2", "feed-community withdrawn v2",
		"feed-imported verified v1", "feed-imported revised v2", "feed-imported withdrawn v2"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("published changes:\n %v\nwant\n %v", got, want)
	}
	if all[2].Threat.Status != core.StatusRejected {
		t.Fatalf("a withdrawal's report is %s", all[2].Threat.Status)
	}
	// Filters: one ecosystem, one kind, a window.
	if py := feedAll(t, s, core.FeedQuery{Registry: core.RegistryPyPI}); len(py) != 3 || py[0].Threat.ID == community.ID {
		t.Fatalf("pypi changes: %d", len(py))
	}
	if w := feedAll(t, s, core.FeedQuery{Kind: core.ChangeWithdrawn}); len(w) != 2 {
		t.Fatalf("withdrawals: %d", len(w))
	}
	if none := feedAll(t, s, core.FeedQuery{To: all[0].Event.At}); len(none) != 0 {
		t.Fatalf("before the first change: %d", len(none))
	}
	// Nothing published is still verified: the plain feed is empty; a new
	// verification shows in it.
	if p := feedAll(t, s, core.FeedQuery{Published: true}); len(p) != 0 {
		t.Fatalf("plain feed lists withdrawn reports: %+v", p)
	}
	verify(t, s, pending.ID, now())
	if p := feedAll(t, s, core.FeedQuery{Published: true}); len(p) != 1 || p[0].Threat.ID != pending.ID || p[0].Event.Version != 2 {
		t.Fatalf("plain feed: %+v", p)
	}
	last, err := s.LastFeedEvent(c, time.Time{})
	if err != nil || last.ThreatID != pending.ID || last.Kind != core.ChangeVerified {
		t.Fatalf("last change: %+v %v", last, err)
	}
	// Before the second change's time: the last change committed earlier
	// (none when the first two share their time).
	var want0 core.FeedEvent
	for _, it := range all {
		if it.Event.At.Before(all[1].Event.At) {
			want0 = it.Event
		}
	}
	if first, err := s.LastFeedEvent(c, all[1].Event.At); err != nil || first.Seq != want0.Seq || !first.At.Equal(want0.At) {
		t.Fatalf("last change before the second: %+v %v, want %+v", first, err, want0)
	}

	// TAXII: each report once, at its latest change; by the id of any of
	// its STIX objects.
	latest := feedAll(t, s, core.FeedQuery{Latest: true})
	got = nil
	for _, it := range latest {
		got = append(got, it.Threat.ResourceIdentifier+" "+it.Event.Kind)
	}
	if want := "feed-community withdrawn, feed-imported withdrawn, feed-pending.example.com verified"; strings.Join(got, ", ") != want {
		t.Fatalf("latest changes: %v, want %s", got, want)
	}
	iocs := latest[0].Threat.IOCs
	if len(iocs) == 0 {
		t.Fatal("no indicator in the community report")
	}
	for _, id := range latest[0].Threat.STIXIDs().All(iocs) {
		if by := feedAll(t, s, core.FeedQuery{Latest: true, ObjectIDs: []string{id, "indicator--00000000-0000-5000-8000-000000000000"}}); len(by) != 1 || by[0].Threat.ID != community.ID {
			t.Fatalf("by object id %s: %+v", id, by)
		}
	}
	if by := feedAll(t, s, core.FeedQuery{Latest: true, ObjectIDs: []string{latest[1].Threat.STIXIDs().Malware(), latest[2].Threat.STIXIDs().Malware()}}); len(by) != 2 {
		t.Fatalf("by two object ids: %d reports", len(by))
	}
	// A batch of reports imported in one transaction: one microsecond each.
	var batch []core.ImportRecord
	for i := range 50 {
		r := report(t, "", core.TypePackage, core.RegistryNPM, fmt.Sprintf("feed-batch-%d", i))
		r.Source, r.UpstreamID, r.UpstreamModified, r.VerifiedAt = "osv", fmt.Sprintf("MAL-BATCH-%d", i), &up, &up
		batch = append(batch, core.ImportRecord{Threat: r})
	}
	if _, err := s.ImportThreats(c, core.ImportBatch{Records: batch, Actor: "osv-import"}); err != nil {
		t.Fatal(err)
	}
	npm := feedAll(t, s, core.FeedQuery{Latest: true, Registry: core.RegistryNPM})
	if len(npm) != 51 {
		t.Fatalf("npm collection: %d reports", len(npm))
	}
	for i := 2; i < len(npm); i++ {
		if d := npm[i].Event.At.Sub(npm[i-1].Event.At); d <= 0 || (i > 1 && d > time.Second) {
			t.Fatalf("imported change %d: %v after the one before", i, d)
		}
	}
}

// A consumer that polls the published changes from its last position while
// eight reviewers verify reports concurrently sees every verification
// exactly once.
func testFeedConcurrentWriters(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "feedrace@example.com")
	const writers, each = 8, 10
	ids := make([][]string, writers)
	for w := range writers {
		for i := range each {
			th := report(t, u.ID, core.TypeDomain, "", fmt.Sprintf("race-%d-%d.example.com", w, i))
			if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
				t.Fatal(err)
			}
			ids[w] = append(ids[w], th.ID)
		}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for _, id := range ids[w] {
				if _, err := s.ReviewThreat(c, core.Review{ThreatID: id, Decision: core.DecisionVerify, ActorName: "Rita", At: now()}); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := map[string]int{}
	var pos core.FeedEvent
	poll := func() {
		page, err := s.Feed(c, core.FeedQuery{AfterAt: pos.At, AfterSeq: pos.Seq, To: time.Now().Add(time.Hour), Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page {
			seen[it.Threat.ID]++
			pos = it.Event
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			poll()
		}
	}
	for range writers * each {
		poll()
	}
	for w := range writers {
		for _, id := range ids[w] {
			if seen[id] != 1 {
				t.Errorf("verification of %s seen %d times", id, seen[id])
			}
		}
	}
}
