package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// ImportedVersions reads back the upstream modified times of imported
// reports, by source, leaving out unknown ids; over the bound is invalid.
func testImportedVersions(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC)
	later := at.Add(time.Hour)
	var recs []core.ImportRecord
	for i, id := range []string{"MAL-1", "MAL-2/npm/a", "MAL-2/pypi/b"} {
		th := report(t, "", core.TypePackage, core.RegistryNPM, "imported-"+string(rune('a'+i)))
		th.Source, th.UpstreamID, th.UpstreamModified = "osv", id, &at
		if i == 2 {
			th.UpstreamModified = &later
		}
		recs = append(recs, core.ImportRecord{Threat: th})
	}
	out, err := s.ImportThreats(c, core.ImportBatch{Records: recs, Actor: "osv-import"})
	if err != nil || len(out) != 3 || out[0].Result != core.ImportCreated {
		t.Fatalf("import: %+v %v", out, err)
	}
	got, err := s.ImportedVersions(c, core.VersionQuery{Source: "osv", IDs: []string{"MAL-1", "MAL-2/pypi/b", "MAL-3", "MAL-2/npm/a"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got["MAL-1"].Equal(at) || !got["MAL-2/npm/a"].Equal(at) || !got["MAL-2/pypi/b"].Equal(later) {
		t.Fatalf("ImportedVersions = %v", got)
	}
	if other, err := s.ImportedVersions(c, core.VersionQuery{Source: "ghsa", IDs: []string{"MAL-1"}}); err != nil || len(other) != 0 {
		t.Fatalf("another source: %v %v", other, err)
	}
	if none, err := s.ImportedVersions(c, core.VersionQuery{Source: "osv", IDs: nil}); err != nil || len(none) != 0 {
		t.Fatalf("no ids: %v %v", none, err)
	}
	if _, err := s.ImportedVersions(c, core.VersionQuery{Source: "osv", IDs: make([]string, core.MaxImportedVersions+1)}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("over the bound: %v", err)
	}
}

// An import attributed to a source user, verified or pending by trust; a
// source's live upstream ids paged in order (ImportedIDs); a withdrawal
// with no upstream version (--full) keeps the stored one; a source user's
// reports stay out of SubmitterRecordsAll, a person's around them do not.
func testImportTrust(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	src, err := core.SourceUser(c, s, "feedx")
	if err != nil || src.Email != "feedx@"+core.SourceUserDomain || src.Name != "feedx" {
		t.Fatalf("source user: %+v %v", src, err)
	}
	if again, err := core.SourceUser(c, s, "feedx"); err != nil || again.ID != src.ID {
		t.Fatalf("source user again: %+v %v", again, err)
	}
	// People whose ids sort before and after the source user's.
	before, after := newUser("before@example.com"), newUser("after@example.com")
	before.ID, after.ID = "00000000-0000-7000-8000-000000000001", "ffffffff-ffff-7fff-bfff-ffffffffffff"
	for _, u := range []core.User{before, after} {
		if _, err := s.CreateUser(c, u); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	rec := func(id string) core.ImportRecord {
		th := report(t, "", core.TypeDomain, "", id+".feedx.example")
		th.Source, th.UpstreamID, th.UpstreamModified = "feedx", id, &at
		return core.ImportRecord{Threat: th}
	}
	out, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{rec("1"), rec("2")}, Actor: "feedx-import", SubmitterID: src.ID})
	if err != nil || out[0].Result != core.ImportCreated || out[1].Result != core.ImportCreated {
		t.Fatalf("verified import: %+v %v", out, err)
	}
	out2, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{rec("3"), rec("4")}, Actor: "feedx-import", SubmitterID: src.ID, Pending: true})
	if err != nil || out2[0].Result != core.ImportCreated {
		t.Fatalf("pending import: %+v %v", out2, err)
	}
	v, err := s.GetThreat(c, out[0].ThreatID)
	if err != nil || v.Status != core.StatusVerified || v.SubmitterID != src.ID || v.VerifiedBy != "feedx-import" || v.VerifiedAt == nil {
		t.Fatalf("verified import stored as %+v %v", v, err)
	}
	p, err := s.GetThreat(c, out2[0].ThreatID)
	if err != nil || p.Status != core.StatusPending || p.SubmitterID != src.ID || p.VerifiedBy != "" || p.VerifiedAt != nil {
		t.Fatalf("pending import stored as %+v %v", p, err)
	}
	if l, err := s.ListPending(c, core.PendingQuery{Limit: 10}); err != nil || l.Total != 2 {
		t.Fatalf("the review queue: %+v %v", l, err)
	}
	if got, err := s.LatestVerified(c, core.LatestFilter{Limit: 10}); err != nil || len(got) != 2 {
		t.Fatalf("published: %d %v", len(got), err)
	}
	// A person's reports on both sides of the source user's id.
	for i, u := range []core.User{before, after} {
		th := report(t, u.ID, core.TypeDomain, "", fmt.Sprintf("person-%d.example", i))
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.SubmitterRecordsAll(c)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for _, r := range recs {
		seen[r.UserID] = r.Pending + r.Verified
	}
	if _, ok := seen[src.ID]; ok || seen[before.ID] != 1 || seen[after.ID] != 1 {
		t.Fatalf("SubmitterRecordsAll: %+v (source user %s)", recs, src.ID)
	}

	// ImportedIDs: live ones, in order, paged.
	page1, err := s.ImportedIDs(c, core.ImportedIDQuery{Source: "feedx", Limit: 3})
	if err != nil || !slices.Equal(page1, []string{"1", "2", "3"}) {
		t.Fatalf("ImportedIDs page 1: %q %v", page1, err)
	}
	if page2, err := s.ImportedIDs(c, core.ImportedIDQuery{Source: "feedx", After: "3", Limit: 3}); err != nil || !slices.Equal(page2, []string{"4"}) {
		t.Fatalf("ImportedIDs page 2: %q %v", page2, err)
	}
	for _, q := range []core.ImportedIDQuery{{Source: "feedx"}, {Source: "feedx", Limit: core.MaxImportedVersions + 1}, {Limit: 5}} {
		if _, err := s.ImportedIDs(c, q); !errors.Is(err, core.ErrInvalid) {
			t.Fatalf("ImportedIDs(%+v) = %v, want invalid", q, err)
		}
	}
	// A --full withdrawal: no upstream version, and the stored one is
	// cleared, so that the record listed again is neither known to
	// ImportedVersions nor unchanged: it restores the report.
	full := func(id string) core.ImportRecord {
		return core.ImportRecord{Threat: core.Threat{Source: "feedx", UpstreamID: id}, Withdrawn: true}
	}
	if out, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{full("2"), full("3")}, Actor: "feedx-import", SubmitterID: src.ID}); err != nil ||
		out[0].Result != core.ImportWithdrawn || out[1].Result != core.ImportWithdrawn {
		t.Fatalf("full withdrawal: %+v %v", out, err)
	}
	w, err := s.GetThreat(c, out[1].ThreatID)
	if err != nil || w.Status != core.StatusRejected || w.UpstreamModified != nil {
		t.Fatalf("after a full withdrawal: %+v %v", w, err)
	}
	if ids, err := s.ImportedIDs(c, core.ImportedIDQuery{Source: "feedx", Limit: 10}); err != nil || !slices.Equal(ids, []string{"1", "4"}) {
		t.Fatalf("ImportedIDs after the withdrawal: %q %v", ids, err)
	}
	if ev, err := s.ReviewEvents(c, out[1].ThreatID); err != nil || ev[len(ev)-1].Action != "unlist" || !strings.Contains(ev[len(ev)-1].Note, "no longer listed by feedx") {
		t.Fatalf("the withdrawal's event: %+v %v", ev, err)
	}
	if vs, err := s.ImportedVersions(c, core.VersionQuery{Source: "feedx", IDs: []string{"1", "2", "3"}}); err != nil || len(vs) != 1 || !vs["1"].Equal(at) {
		t.Fatalf("ImportedVersions after the withdrawal: %v %v", vs, err)
	}
	// Listed again (at the same upstream version): restored to what each
	// was, verified or pending, with the record as a revision.
	back, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{rec("2"), rec("3")}, Actor: "feedx-import", SubmitterID: src.ID})
	if err != nil || back[0].Result != core.ImportRestored || back[1].Result != core.ImportRestored || back[0].ThreatID != out[1].ThreatID {
		t.Fatalf("listed again: %+v %v", back, err)
	}
	r, err := s.GetThreat(c, out[1].ThreatID)
	if err != nil || r.Status != core.StatusVerified || r.UpstreamModified == nil || !r.UpstreamModified.Equal(at) || r.Version != w.Version+1 || r.VerifiedAt == nil {
		t.Fatalf("restored: %+v %v", r, err)
	}
	if ev, err := s.ReviewEvents(c, r.ID); err != nil || ev[len(ev)-1].Action != "restore" || ev[len(ev)-1].To != core.StatusVerified || ev[len(ev)-1].Note != "listed again by feedx (2)" {
		t.Fatalf("the restoration's event: %+v %v", ev[len(ev)-1], err)
	}
	if p, err := s.GetThreat(c, back[1].ThreatID); err != nil || p.Status != core.StatusPending || p.VerifiedAt != nil {
		t.Fatalf("restored pending: %+v %v", p, err)
	}
	if got, err := s.LatestVerified(c, core.LatestFilter{Limit: 10}); err != nil || len(got) != 2 {
		t.Fatalf("published after the restoration: %d %v", len(got), err)
	}
	if again, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{rec("2")}, Actor: "feedx-import", SubmitterID: src.ID}); err != nil || again[0].Result != core.ImportUnchanged {
		t.Fatalf("the restored record again: %+v %v", again, err)
	}
	// Withdrawn by --full, then its subject reported by a person: that
	// report stands, and the listed record is skipped with the reason.
	if out, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{full("4")}, Actor: "feedx-import", SubmitterID: src.ID}); err != nil || out[0].Result != core.ImportWithdrawn {
		t.Fatalf("full withdrawal of 4: %+v %v", out, err)
	}
	person := report(t, after.ID, core.TypeDomain, "", "4.feedx.example")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: person}); err != nil {
		t.Fatal(err)
	}
	if o, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{rec("4")}, Actor: "feedx-import", SubmitterID: src.ID}); err != nil ||
		o[0].Result != core.ImportSkipped || !strings.Contains(o[0].Reason, "now covers its subject") || !strings.Contains(o[0].Reason, person.ID) {
		t.Fatalf("listed again beside a live report: %+v %v", o, err)
	}
	// Withdrawn by a reviewer: a newer version of it is an update, and it
	// stays withdrawn.
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: out[0].ThreatID, Decision: core.DecisionReject, Note: "a false positive", ActorName: "rita", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	newer := rec("1")
	later := at.Add(time.Hour)
	newer.Threat.UpstreamModified = &later
	if o, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{newer}, Actor: "feedx-import", SubmitterID: src.ID}); err != nil || o[0].Result != core.ImportUpdated {
		t.Fatalf("a reviewer's withdrawal listed again: %+v %v", o, err)
	}
	if x, err := s.GetThreat(c, out[0].ThreatID); err != nil || x.Status != core.StatusRejected {
		t.Fatalf("a reviewer's withdrawal after the record: %+v %v", x, err)
	}
	// One upstream id twice in a batch, naming two subjects (two OSV
	// files of one id): the first is created, the second applied to it,
	// never a failed batch.
	twice := rec("7")
	twice.Threat = report(t, "", core.TypeDomain, "", "7b.feedx.example")
	twice.Threat.Source, twice.Threat.UpstreamID, twice.Threat.UpstreamModified = "feedx", "7", &at
	if o, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{rec("7"), twice}, Actor: "feedx-import", SubmitterID: src.ID}); err != nil ||
		o[0].Result != core.ImportCreated || o[1].Result != core.ImportUnchanged || o[1].ThreatID != o[0].ThreatID {
		t.Fatalf("an upstream id twice in a batch: %+v %v", o, err)
	}
	// A person's verified report that the source lists too: attached, it
	// is never the source's to withdraw, neither by --full (ImportedIDs
	// leaves it out) nor by a withdrawal upstream.
	mine := report(t, before.ID, core.TypeDomain, "", "5.feedx.example")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: mine}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: mine.ID, Decision: core.DecisionVerify, ActorName: "rita", At: time.Now(), Version: 1}); err != nil {
		t.Fatal(err)
	}
	if o, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{rec("5")}, Actor: "feedx-import", SubmitterID: src.ID}); err != nil || o[0].Result != core.ImportAttached || o[0].ThreatID != mine.ID {
		t.Fatalf("attached: %+v %v", o, err)
	}
	if ids, err := s.ImportedIDs(c, core.ImportedIDQuery{Source: "feedx", Limit: 10}); err != nil || slices.Contains(ids, "5") {
		t.Fatalf("ImportedIDs lists the attached report: %q %v", ids, err)
	}
	upstream := rec("5")
	upstream.Withdrawn, upstream.Threat.UpstreamModified = true, &later
	for _, w := range []core.ImportRecord{full("5"), upstream} {
		if o, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{w}, Actor: "feedx-import", SubmitterID: src.ID}); err != nil ||
			o[0].Result != core.ImportSkipped || !strings.Contains(o[0].Reason, "not one it created") {
			t.Fatalf("the attached report withdrawn by the source: %+v %v", o, err)
		}
		if x, err := s.GetThreat(c, mine.ID); err != nil || x.Status != core.StatusVerified {
			t.Fatalf("the person's report after the source's withdrawal: %+v %v", x, err)
		}
	}
}
