package storagetest

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// Secret creates a named secret once: the same name gives the same value,
// after a reopen too; another name gives another.
func testSecret(t *testing.T, b Backend) {
	db := dbName(t)
	s := open(t, b, db)
	c := ctx(t)
	first, err := s.Secret(c, "cursor")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(first) {
		t.Fatalf("secret %q is not 32 bytes of hex", first)
	}
	if again, err := s.Secret(c, "cursor"); err != nil || again != first {
		t.Fatalf("second read: %q %v", again, err)
	}
	if other, err := s.Secret(c, "other"); err != nil || other == first {
		t.Fatalf("another name: %q %v", other, err)
	}
	_ = s.Close()
	if reopened, err := open(t, b, db).Secret(c, "cursor"); err != nil || reopened != first {
		t.Fatalf("after a reopen: %q %v", reopened, err)
	}
}

// Lease: one holder at a time; the holder renews; an expired lease goes to
// whoever asks.
func testLease(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	take := func(name, holder string, ttl time.Duration, want bool) {
		t.Helper()
		if got, err := s.Lease(c, core.LeaseClaim{Name: name, Holder: holder, TTL: ttl}); err != nil || got != want {
			t.Fatalf("Lease(%s, %s, %v) = %v %v, want %v", name, holder, ttl, got, err, want)
		}
	}
	take("import:osv", "daemon-a", time.Hour, true)
	take("import:osv", "daemon-b", time.Hour, false)
	take("import:osv", "daemon-a", time.Hour, true) // renewal
	take("import:ghsa", "daemon-b", time.Hour, true)
	// A lease that has run out (a holder that stopped renewing).
	take("expired", "daemon-a", -time.Minute, true)
	take("expired", "daemon-b", time.Hour, true)
	take("expired", "daemon-a", time.Hour, false)
}

// Usage counts add up per token, endpoint and day.
func testUsage(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	add := []core.UsageDelta{
		{Day: "2026-11-22", TokenID: "tok-1", Endpoint: "threat-feed", Calls: 3},
		{Day: "2026-11-22", TokenID: "tok-1", Endpoint: "threat-data", Calls: 1},
		{Day: "2026-11-22", TokenID: "tok-2", Endpoint: "threat-feed", Calls: 7},
		{Day: "2026-11-21", TokenID: "tok-1", Endpoint: "threat-feed", Calls: 100},
	}
	for range 2 {
		if err := s.AddUsage(c, add); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddUsage(c, nil); err != nil {
		t.Fatalf("no deltas: %v", err)
	}
	got, err := s.Usage(c, core.UsageQuery{TokenID: "tok-1", Day: "2026-11-22"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"threat-feed": 6, "threat-data": 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("usage = %v, want %v", got, want)
	}
	if none, err := s.Usage(c, core.UsageQuery{TokenID: "tok-1", Day: "2026-11-23"}); err != nil || len(none) != 0 {
		t.Fatalf("a day without calls: %v %v", none, err)
	}
}

// QueryThreats pages verified reports in (verified_at, id) order, either
// way, within [from, to), by ecosystem or publisher; pending and rejected
// reports are never listed.
func testQueryThreats(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "q@example.com")
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var verified []string // in verification order
	for i := range 7 {
		reg := []string{core.RegistryNPM, core.RegistryPyPI}[i%2]
		th := report(t, u.ID, core.TypePackage, reg, fmt.Sprintf("query-%d", i))
		th.Details.Publisher = []string{"Mallory", "eve"}[i%2]
		create(t, s, th)
		// Two share a verification time: the id orders them.
		at := base.Add(time.Duration(min(i, 5)) * time.Hour)
		verify(t, s, th.ID, at)
		verified = append(verified, th.ID)
	}
	// The order of the whole list: the two of the same time by id.
	asc := []int{0, 1, 2, 3, 4, 5, 6}
	if verified[5] > verified[6] {
		asc[5], asc[6] = 6, 5
	}
	desc := slices.Clone(asc)
	slices.Reverse(desc)
	pending := report(t, u.ID, core.TypePackage, core.RegistryNPM, "query-pending")
	pending.Details.Publisher = "Mallory"
	rejected := report(t, u.ID, core.TypePackage, core.RegistryNPM, "query-rejected")
	create(t, s, pending, rejected)
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: rejected.ID, Decision: core.DecisionReject, Note: "no", ActorName: "Rita", At: base}); err != nil {
		t.Fatal(err)
	}
	// Every page of q, following the keyset.
	pages := func(q core.ThreatQuery) []string {
		t.Helper()
		var ids []string
		for range 20 {
			page, err := s.QueryThreats(c, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > q.Limit {
				t.Fatalf("page of %d over the limit %d", len(page), q.Limit)
			}
			for _, th := range page {
				if th.Status != core.StatusVerified || th.VerifiedAt == nil || th.Details.ThreatDescription == "" {
					t.Fatalf("listed %+v", th)
				}
				ids = append(ids, th.ID)
			}
			if len(page) < q.Limit {
				return ids
			}
			last := page[len(page)-1]
			q.AfterVerifiedAt, q.AfterID = *last.VerifiedAt, last.ID
		}
		t.Fatal("paging does not end")
		return nil
	}
	check := func(name string, q core.ThreatQuery, want ...int) {
		t.Helper()
		var w []string
		for _, i := range want {
			w = append(w, verified[i])
		}
		if got := pages(q); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Fatalf("%s:\n got %v\nwant %v", name, got, w)
		}
	}
	check("all, ascending", core.ThreatQuery{Limit: 2}, asc...)
	check("all, descending", core.ThreatQuery{Limit: 3, Descending: true}, desc...)
	check("window", core.ThreatQuery{VerifiedFrom: base.Add(time.Hour), VerifiedTo: base.Add(5 * time.Hour), Limit: 2}, 1, 2, 3, 4)
	check("ecosystem", core.ThreatQuery{Registry: core.RegistryPyPI, Limit: 10}, 1, 3, 5)
	check("publisher, any case", core.ThreatQuery{Publisher: "MALLORY", Limit: 1, Descending: true}, 6, 4, 2, 0)
	check("publisher, not a prefix", core.ThreatQuery{Publisher: "Mall", Limit: 10})
}

// ListRevisions returns every revision of a report, whatever its state,
// oldest first, with its patch.
func testListRevisions(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	owner := user(t, s, "rev-owner@example.com")
	th := report(t, owner.ID, core.TypePackage, core.RegistryNPM, "listed-revisions")
	create(t, s, th)
	if none, err := s.ListRevisions(c, th.ID); err != nil || len(none) != 0 {
		t.Fatalf("a new report's revisions: %+v %v", none, err)
	}
	modify := func(author core.User, base int, patch core.Submission) core.Revision {
		t.Helper()
		_, rev, err := modifyThreat(c, s, core.Modification{ThreatID: th.ID, AuthorID: author.ID, AuthorName: author.Name, Patch: core.Patch{Submission: patch}, BaseRevision: base, At: now()}, noLimits)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	applied := modify(owner, 0, core.Submission{Publisher: ptr("owner-edit")})
	verify(t, s, th.ID, now())
	other := user(t, s, "rev-other@example.com")
	approved := modify(other, 1, core.Submission{SeverityLevel: ptr("high")})
	if _, _, err := decideRevision(c, s, core.RevisionDecision{RevisionID: approved.ID, Approve: true, ActorName: "Rita", At: now()}); err != nil {
		t.Fatal(err)
	}
	refused := modify(other, 2, core.Submission{Tags: []string{"a", "b"}})
	if _, _, err := decideRevision(c, s, core.RevisionDecision{RevisionID: refused.ID, Note: "no evidence", ActorName: "Rita", At: now()}); err != nil {
		t.Fatal(err)
	}
	waiting := modify(other, 2, core.Submission{Tags: []string{}})
	got, err := s.ListRevisions(c, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id, state, fields string
	}{{applied.ID, core.RevisionApplied, "publisher"}, {approved.ID, core.RevisionApproved, "severity_level"},
		{refused.ID, core.RevisionRejected, "tags"}, {waiting.ID, core.RevisionPending, "tags"}}
	if len(got) != len(want) {
		t.Fatalf("%d revisions, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		r := got[i]
		if r.ID != w.id || r.State != w.state || strings.Join(core.PatchFields(r.Patch), ",") != w.fields || r.ThreatID != th.ID || r.Number != i+1 {
			t.Fatalf("revision %d: %+v, want %+v", i, r, w)
		}
	}
	if got[2].Note != "no evidence" || got[2].DecidedBy != "Rita" || got[2].DecidedAt == nil || got[3].DecidedAt != nil {
		t.Fatalf("decisions: %+v / %+v", got[2], got[3])
	}
	if tags := got[3].Patch.Tags; tags == nil || len(tags) != 0 {
		t.Fatalf("a cleared list is kept as cleared: %v", tags)
	}
	if none, err := s.ListRevisions(c, "00000000-0000-0000-0000-000000000000"); err != nil || len(none) != 0 {
		t.Fatalf("an unknown report: %+v %v", none, err)
	}
}

// ImportThreats: one outcome per record, in order: new, unchanged at the
// same upstream version, updated by a newer one, attached to a live
// community report with the same key (which takes the upstream id),
// withdrawn, and a withdrawal of what was never imported skipped.
func testImportOutcomes(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "imp@example.com")
	community := report(t, u.ID, core.TypePackage, core.RegistryNPM, "imp-community")
	create(t, s, community)
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := func(id, name string, modified time.Time, withdrawn bool) core.ImportRecord {
		th := report(t, "", core.TypePackage, core.RegistryNPM, name)
		m := modified
		th.Source, th.UpstreamID, th.UpstreamModified, th.VerifiedAt = "osv", id, &m, &at
		return core.ImportRecord{Threat: th, Withdrawn: withdrawn}
	}
	run := func(recs []core.ImportRecord, want ...string) []core.ImportOutcome {
		t.Helper()
		out, err := s.ImportThreats(c, core.ImportBatch{Records: recs, Actor: "osv-import"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, o := range out {
			got = append(got, o.Result)
			if o.UpstreamID != recs[i].Threat.UpstreamID {
				t.Fatalf("outcome %d is for %s, record %s", i, o.UpstreamID, recs[i].Threat.UpstreamID)
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("outcomes %v (%+v), want %v", got, out, want)
		}
		return out
	}
	first := run([]core.ImportRecord{rec("MAL-A", "imp-a", at, false), rec("MAL-B", "imp-b", at, false), rec("MAL-C", "imp-community", at, false)},
		core.ImportCreated, core.ImportCreated, core.ImportAttached)
	if first[2].ThreatID != community.ID {
		t.Fatalf("attached to %s, want the community report %s", first[2].ThreatID, community.ID)
	}
	newer := rec("MAL-A", "imp-a", at.Add(time.Hour), false)
	newer.Threat.Details.ThreatDescription = "updated upstream"
	second := run([]core.ImportRecord{rec("MAL-B", "imp-b", at, false), newer, rec("MAL-B", "imp-b", at.Add(time.Hour), true), rec("MAL-Z", "imp-z", at, true)},
		core.ImportUnchanged, core.ImportUpdated, core.ImportWithdrawn, core.ImportSkipped)
	if second[3].Reason == "" {
		t.Fatal("a skipped record has no reason")
	}
	a, err := s.GetThreat(c, first[0].ThreatID)
	if err != nil || a.Status != core.StatusVerified || a.Details.ThreatDescription != "updated upstream" || !a.UpstreamModified.Equal(at.Add(time.Hour)) || a.Version != 2 {
		t.Fatalf("updated report: %+v %v", a, err)
	}
	if b, err := s.GetThreat(c, first[1].ThreatID); err != nil || b.Status != core.StatusRejected {
		t.Fatalf("withdrawn report: %+v %v", b, err)
	}
	// The attached report is followed from now on under the upstream id,
	// still waiting for its review.
	if cm, err := s.GetThreat(c, community.ID); err != nil || cm.Source != "osv" || cm.UpstreamID != "MAL-C" || cm.Status != core.StatusPending || cm.SubmitterID != u.ID {
		t.Fatalf("the attached community report: %#v %v", cm, err)
	}

	// A community report exported as OSV (THREATD-<id>) and read back is
	// left alone: unchanged, not attached, not revised, not withdrawn.
	own := report(t, u.ID, core.TypePackage, core.RegistryNPM, "imp-own")
	create(t, s, own)
	before, _ := s.GetThreat(c, own.ID)
	exported := rec(core.OSVCommunityPrefix+own.ID, "imp-own", at, false)
	exported.Threat.Details.ThreatDescription = "as exported"
	withdrawn := rec(core.OSVCommunityPrefix+own.ID, "imp-own", at.Add(time.Hour), true)
	for _, o := range run([]core.ImportRecord{exported, withdrawn}, core.ImportUnchanged, core.ImportUnchanged) {
		if o.ThreatID != own.ID {
			t.Fatalf("own record's outcome names %s, want %s", o.ThreatID, own.ID)
		}
	}
	after, err := s.GetThreat(c, own.ID)
	if err != nil || after.Version != before.Version || after.Source != "" || after.UpstreamID != "" || after.Status != core.StatusPending ||
		after.Details.ThreatDescription == "as exported" {
		t.Fatalf("own report after reading its export back: %#v %v", after, err)
	}
	if revs, _ := s.ListRevisions(c, own.ID); len(revs) != 0 {
		t.Fatalf("own report got %d revisions", len(revs))
	}
}
