package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/port"
)

func verify(t *testing.T, s port.Store, id string, at time.Time) {
	t.Helper()
	if _, err := s.ReviewThreat(ctx(t), core.Review{ThreatID: id, Decision: core.DecisionVerify, ActorName: "Rita", At: at}); err != nil {
		t.Fatal(err)
	}
}

func testLatestVerified(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "l@example.com")
	base := now().Add(-time.Hour)
	var ids []string
	for i := range 5 {
		th := report(t, u.ID, core.TypePackage, "npm", fmt.Sprintf("latest-%d", i))
		if i%2 == 1 {
			th = report(t, u.ID, core.TypeDomain, "", fmt.Sprintf("latest-%d.example.com", i))
			th.Details.SeverityLevel = core.SeverityHigh
		}
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}
	// Verified out of submission order; one stays pending.
	for _, i := range []int{3, 0, 4, 1} {
		verify(t, s, ids[i], base.Add(time.Duration(len(ids)-i)*time.Minute))
	}
	got, err := s.LatestVerified(c, core.LatestFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, th := range got {
		order = append(order, th.ID)
		if th.Status != core.StatusVerified || th.Details.ThreatDescription == "" {
			t.Fatalf("latest returned %+v", th)
		}
	}
	want := []string{ids[0], ids[1], ids[3], ids[4]} // verified at base+5m, +4m, +2m, +1m
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("order %v, want %v (most recently verified first)", order, want)
	}
	if got, _ := s.LatestVerified(c, core.LatestFilter{Limit: 2}); len(got) != 2 || got[0].ID != ids[0] {
		t.Fatalf("limit 2: %d", len(got))
	}
	if got, _ := s.LatestVerified(c, core.LatestFilter{ReportType: core.TypeDomain, Limit: 10}); len(got) != 2 || got[0].ReportType != core.TypeDomain {
		t.Fatalf("type filter: %+v", got)
	}
	if got, _ := s.LatestVerified(c, core.LatestFilter{Registry: "npm", Limit: 10}); len(got) != 2 || got[0].Registry != "npm" {
		t.Fatalf("registry filter: %+v", got)
	}
	if got, _ := s.LatestVerified(c, core.LatestFilter{Severity: core.SeverityHigh, Limit: 10}); len(got) != 2 {
		t.Fatalf("severity filter: %d", len(got))
	}
}

func testVerifiedSummaries(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	// About 4,000 storage calls in a row: 8 s alone, but over 60 s under
	// the race detector with the other packages' tests on a contended
	// 2-core VM, and once past 5 minutes on PostgreSQL there (each call
	// a commit). The deadline guards against a hang, not for speed.
	c, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	u := user(t, s, "sum@example.com")
	const n = 2100 // more than one batch
	want := map[string]string{}
	for i := range n {
		th := report(t, u.ID, core.TypeIP, "", fmt.Sprintf("10.%d.%d.%d", i/65536, (i/256)%256, i%256))
		th.Details.VersionInfo = ""
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
			t.Fatal(err)
		}
		if i%7 != 0 { // a few stay pending
			verify(t, s, th.ID, now())
			want[th.ID] = th.CanonicalKey
		}
	}
	got := map[string]string{}
	batches := 0
	err := s.EachVerifiedSummary(c, func(batch []core.Summary) error {
		batches++
		for _, sum := range batch {
			if sum.VerifiedAt.IsZero() || sum.ReportType != core.TypeIP {
				return fmt.Errorf("summary %+v", sum)
			}
			got[sum.ID] = sum.CanonicalKey
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || batches < 2 {
		t.Fatalf("%d summaries in %d batches, want %d in several", len(got), batches, len(want))
	}
	for id, k := range want {
		if got[id] != k {
			t.Fatalf("summary of %s: %q, want %q", id, got[id], k)
		}
	}
}

// Two pending revisions that each add evidence, approved one after the
// other, keep the report's links and both additions: an addition is kept as
// such in the stored patch, not as the list it made when proposed.
func testEvidenceAdd(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	owner := user(t, s, "owner@example.com")
	th := report(t, owner.ID, core.TypePackage, "npm", "evidence-pkg")
	th.Details.EvidenceReferences = "https://a.example/1"
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Version: 1, Decision: core.DecisionVerify, ActorName: "Rita", At: now()}); err != nil {
		t.Fatal(err)
	}
	var revs []core.Revision
	for _, add := range []string{"https://b.example/2", "https://c.example/3|https://a.example/1"} {
		_, rev, err := modifyThreat(c, s, core.Modification{ThreatID: th.ID, AuthorID: owner.ID, AuthorName: owner.Name,
			Patch: core.Patch{EvidenceReferencesAdd: ptr(add)}, At: now()}, noLimits)
		if err != nil || rev.State != core.RevisionPending || rev.Patch.EvidenceReferencesAdd == nil || *rev.Patch.EvidenceReferencesAdd != add ||
			rev.Patch.EvidenceReferences != nil {
			t.Fatalf("proposal adding %s: %+v %v", add, rev, err)
		}
		revs = append(revs, rev)
	}
	pending, err := s.ListPendingRevisions(c)
	if err != nil || len(pending) != 2 || strings.Join(core.PatchFields(pending[1].Patch), ",") != "evidence_references_add" {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	var got core.Threat
	for _, r := range revs {
		if got, _, err = decideRevision(c, s, core.RevisionDecision{RevisionID: r.ID, Approve: true, ActorName: "Rita", At: now()}); err != nil {
			t.Fatal(err)
		}
	}
	if want := "https://a.example/1|https://b.example/2|https://c.example/3"; got.Details.EvidenceReferences != want {
		t.Fatalf("evidence after both approvals: %q, want %q", got.Details.EvidenceReferences, want)
	}
}

func testModify(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	owner := user(t, s, "owner@example.com")
	other := user(t, s, "other@example.com")
	th := report(t, owner.ID, core.TypePackage, "npm", "mod-pkg")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	mod := func(author core.User, base int, patch core.Submission) (core.Threat, core.Revision, error) {
		return modifyThreat(c, s, core.Modification{ThreatID: th.ID, AuthorID: author.ID, AuthorName: author.Name, Patch: core.Patch{Submission: patch}, BaseRevision: base, At: now()}, noLimits)
	}
	if cur, _ := s.GetThreat(c, th.ID); cur.Version != 1 {
		t.Fatalf("a new report is at version %d, want 1", cur.Version)
	}
	// The owner's change to a pending report applies at once.
	got, rev, err := mod(owner, 0, core.Submission{Publisher: ptr("mallory"), Tags: []string{"a"}})
	if err != nil || rev.State != core.RevisionApplied || rev.Number != 1 || got.Revision != 1 || got.Details.Publisher != "mallory" || got.Version != 2 {
		t.Fatalf("owner edit: %+v %+v %v", got, rev, err)
	}
	// A decision on the version before the edit is refused and changes nothing.
	var ve *core.VersionError
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Version: 1, Decision: core.DecisionVerify, ActorName: "Rita", At: now()}); !errors.As(err, &ve) ||
		ve.Asked != 1 || ve.Current != 2 || !errors.Is(err, core.ErrConflict) {
		t.Fatalf("verify of version 1 after an edit: %v", err)
	}
	if cur, _ := s.GetThreat(c, th.ID); cur.Status != core.StatusPending || cur.Version != 2 {
		t.Fatalf("after a refused decision: %s version %d", cur.Status, cur.Version)
	}
	// Anyone else's waits for review.
	got, rev2, err := mod(other, 1, core.Submission{SeverityLevel: ptr("high")})
	if err != nil || rev2.State != core.RevisionPending || rev2.Number != 2 || got.Details.SeverityLevel != "" || got.Revision != 1 {
		t.Fatalf("other's edit: %+v %+v %v", got, rev2, err)
	}
	if cur, _ := s.GetThreat(c, th.ID); cur.Details.SeverityLevel != "" || cur.Version != 2 {
		t.Fatalf("pending revision changed the report (version %d)", cur.Version)
	}
	// Stale base revision.
	if _, _, err := mod(owner, 0, core.Submission{Publisher: ptr("x")}); !errors.Is(err, core.ErrStale) {
		t.Fatalf("stale base: %v", err)
	}
	// Once verified, even the owner's change waits.
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Version: 2, Decision: core.DecisionVerify, ActorName: "Rita", At: now()}); err != nil {
		t.Fatal(err)
	}
	_, rev3, err := mod(owner, 1, core.Submission{Tags: []string{}})
	if err != nil || rev3.State != core.RevisionPending || rev3.Patch.Tags == nil || len(rev3.Patch.Tags) != 0 {
		t.Fatalf("owner edit of a verified report: %+v %v", rev3, err)
	}
	pending, err := s.ListPendingRevisions(c)
	if err != nil || len(pending) != 2 || pending[0].ID != rev2.ID || pending[1].ID != rev3.ID || *pending[0].Patch.SeverityLevel != "high" {
		t.Fatalf("pending revisions: %+v %v", pending, err)
	}
	// Approving applies; rejecting keeps the report as it was.
	approved, r2, err := decideRevision(c, s, core.RevisionDecision{RevisionID: rev2.ID, Approve: true, ActorName: "Rita", At: now()})
	if err != nil || r2.State != core.RevisionApproved || approved.Details.SeverityLevel != core.SeverityHigh || approved.Revision != 2 ||
		approved.Details.Publisher != "mallory" || r2.DecidedBy != "Rita" || approved.Version != 3 {
		t.Fatalf("approve: %+v %+v %v", approved.Details, r2, err)
	}
	kept, r3, err := decideRevision(c, s, core.RevisionDecision{RevisionID: rev3.ID, Approve: false, Note: "keep tags", ActorName: "Rita", At: now()})
	if err != nil || r3.State != core.RevisionRejected || strings.Join(kept.Details.Tags, ",") != "a" || r3.Note != "keep tags" || kept.Version != 3 {
		t.Fatalf("reject: %+v %+v %v", kept.Details, r3, err)
	}
	if _, _, err := decideRevision(c, s, core.RevisionDecision{RevisionID: rev3.ID, Approve: true, ActorName: "x", At: now()}); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("deciding twice: %v", err)
	}
	// A rejected report cannot be modified.
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Version: 2, Decision: core.DecisionReject, Note: "withdrawn", ActorName: "x", At: now()}); !errors.As(err, &ve) {
		t.Fatalf("withdrawal of version 2 at version 3: %v", err)
	}
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Version: 3, Decision: core.DecisionReject, Note: "withdrawn", ActorName: "x", At: now()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := mod(owner, 2, core.Submission{Publisher: ptr("y")}); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("modify rejected: %v", err)
	}
	// Every revision is kept, with its events.
	ev, _ := s.ReviewEvents(c, th.ID)
	var actions []string
	for _, e := range ev {
		actions = append(actions, e.Action)
	}
	if strings.Join(actions, ",") != "submit,revise,propose-revision,verify,propose-revision,approve-revision,reject-revision,reject" {
		t.Fatalf("events: %v", actions)
	}
}

func testModifyHourlyLimit(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "busy@example.com")
	var ids []string
	for i := range 2 {
		th := report(t, u.ID, core.TypeIP, "", fmt.Sprintf("192.0.2.%d", i+1))
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}
	p := core.SubmitPolicy{HourlyLimit: 3, Now: now()}
	if _, _, err := modifyThreat(c, s, core.Modification{ThreatID: ids[0], AuthorID: u.ID, AuthorName: "b", Patch: core.Patch{Submission: core.Submission{Publisher: ptr("p")}}, At: now()}, p); err != nil {
		t.Fatalf("third action in the hour: %v", err)
	}
	_, _, err := modifyThreat(c, s, core.Modification{ThreatID: ids[1], AuthorID: u.ID, AuthorName: "b", Patch: core.Patch{Submission: core.Submission{Publisher: ptr("p")}}, At: now()}, p)
	var hl *core.HourlyLimitError
	if !errors.As(err, &hl) || hl.Limit != 3 {
		t.Fatalf("fourth action: %v", err)
	}
	err = s.CreateThreat(c, core.SubmittedThreat{Threat: report(t, u.ID, core.TypeIP, "", "192.0.2.9"), Policy: p})
	if !errors.As(err, &hl) {
		t.Fatalf("revisions must count toward the submission limit: %v", err)
	}
}

// testReviewVersionRace races an owner's edits against a decision on
// version 1: either the decision lands first (verified at version 1, later
// edits wait as proposals) or it is refused; never verified at a later
// version that the reviewer did not read.
func testReviewVersionRace(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	owner := user(t, s, "racer@example.com")
	for i := range 10 {
		th := report(t, owner.ID, core.TypePackage, "npm", fmt.Sprintf("race-pkg-%d", i))
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, _, err := modifyThreat(c, s, core.Modification{ThreatID: th.ID, AuthorID: owner.ID, AuthorName: owner.Name,
				Patch: core.Patch{Submission: core.Submission{Publisher: ptr("edited")}}, BaseRevision: 0, At: now()}, noLimits)
			done <- err
		}()
		got, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Version: 1, Decision: core.DecisionVerify, ActorName: "Rita", At: now()})
		editErr := <-done
		cur, gerr := s.GetThreat(c, th.ID)
		if gerr != nil {
			t.Fatal(gerr)
		}
		switch {
		case err == nil:
			// The decision came first: what was verified is version 1's text.
			if got.Version != 1 || got.Details.Publisher == "edited" {
				t.Fatalf("verified %+v", got)
			}
			if cur.Status != core.StatusVerified || cur.Details.Publisher == "edited" {
				t.Fatalf("an edit after the decision changed the published report: %+v (edit: %v)", cur, editErr)
			}
		case errors.Is(err, core.ErrConflict):
			if editErr != nil || cur.Status != core.StatusPending || cur.Version != 2 {
				t.Fatalf("refused decision, but the report is %s at version %d (edit: %v)", cur.Status, cur.Version, editErr)
			}
		default:
			t.Fatal(err)
		}
	}
}

// modifyThreat and decideRevision change a report as the daemon does
// (core.Reports.Modify and DecideRevision): with the content version the
// change is merged onto and the merged content's indicators (core.Derive).
// A change that does not merge is sent without them, for the store to
// refuse.
func modifyThreat(c context.Context, s port.Store, m core.Modification, p core.SubmitPolicy) (core.Threat, core.Revision, error) {
	if cur, err := s.GetThreat(c, m.ThreatID); err == nil {
		if merged, err := core.Merged(cur, m.Patch, m.At); err == nil {
			m.Version, m.IOCs = cur.Version, merged.IOCs
		}
	}
	m.Policy = p
	mod, err := s.ModifyThreat(c, m)
	return mod.Threat, mod.Revision, err
}

func decideRevision(c context.Context, s port.Store, d core.RevisionDecision) (core.Threat, core.Revision, error) {
	if rev, err := s.GetRevision(c, d.RevisionID); err == nil && d.Approve {
		if cur, err := s.GetThreat(c, rev.ThreatID); err == nil {
			if merged, err := core.Merged(cur, rev.Patch, d.At); err == nil {
				d.Version, d.IOCs = cur.Version, merged.IOCs
			}
		}
	}
	mod, err := s.DecideRevision(c, d)
	return mod.Threat, mod.Revision, err
}
