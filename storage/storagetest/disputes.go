package storagetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// testDisputes: false-positive votes of distinct users other than the
// submitter, counted from the report's last decision, put it in dispute
// at the threshold (once); keeping it closes the dispute and the same
// voters cannot reopen it; new ones can; a withdrawal closes it too. Each
// step is a review event and a published change.
func testDisputes(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	sub := user(t, s, "submitter@example.com")
	var voters []core.User
	for i := range 8 {
		voters = append(voters, user(t, s, fmt.Sprintf("voter%d@example.com", i)))
	}
	th := report(t, sub.ID, core.TypePackage, "npm", "disputed-pkg")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	other := report(t, sub.ID, core.TypePackage, "npm", "undisputed-pkg")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: other, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	verify(t, s, th.ID, now())
	verify(t, s, other.ID, now())
	time.Sleep(time.Millisecond) // votes come after the verification
	vote := func(u core.User) string {
		t.Helper()
		sg, err := community.NewSighting(community.SightingRequest{Type: community.SightingFalsePositive, Note: "our own package, by " + u.Email}, th.ID, u.ID, now())
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.AddSightings(c, community.SightingBatch{Sightings: []community.Sighting{sg}, DisputeVotes: 3})
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	state := func() (core.Threat, core.SightingCounts) {
		t.Helper()
		got, err := s.GetThreat(c, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		counts, err := s.CountSightings(c, []string{th.ID})
		if err != nil || len(counts) != 1 {
			t.Fatalf("counts: %v %v", counts, err)
		}
		return got, counts[0]
	}
	events := func(kind string) int {
		t.Helper()
		n := 0
		for _, it := range feedAll(t, s, core.FeedQuery{Kind: kind}) {
			if it.Threat.ID == th.ID {
				n++
			}
		}
		return n
	}
	// The submitter's own vote is stored, not counted; two more are not
	// enough.
	for _, u := range []core.User{sub, voters[0], voters[1]} {
		if out := vote(u); out != community.SightingAdded {
			t.Fatalf("vote: %s", out)
		}
	}
	if got, counts := state(); got.DisputedAt != nil || counts.Votes != 2 || counts.Disputed || counts.FalsePositive != 3 {
		t.Fatalf("two counted votes: disputed %v, counts %+v", got.DisputedAt, counts)
	}
	if out := vote(voters[2]); out != community.SightingAdded {
		t.Fatalf("third vote: %s", out)
	}
	got, counts := state()
	if got.DisputedAt == nil || counts.Votes != 3 || !counts.Disputed || got.Status != core.StatusVerified {
		t.Fatalf("three votes: %+v, counts %+v", got, counts)
	}
	vote(voters[3])
	if events(core.ChangeDisputed) != 1 {
		t.Fatalf("%d disputed changes, want 1 (a fourth vote does not open another)", events(core.ChangeDisputed))
	}
	list, err := s.ListDisputed(c, community.DisputeQuery{Limit: 10})
	if err != nil || list.Total != 1 || len(list.Threats) != 1 || list.Threats[0].ID != th.ID {
		t.Fatalf("disputed list: %+v %v", list, err)
	}
	votes, err := s.DisputeVotes(c, th.ID)
	if err != nil || len(votes) != 4 {
		t.Fatalf("votes: %d %v", len(votes), err)
	}
	for _, v := range votes {
		if v.UserID == sub.ID || v.Note == "" {
			t.Fatalf("a listed vote: %+v", v)
		}
	}

	// Keeping: only a disputed report, with the dispute closed after.
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: other.ID, Decision: core.DecisionKeep, Note: "stands", ActorName: "Rita", At: now()}); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("keeping an undisputed report: %v", err)
	}
	kept, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Decision: core.DecisionKeep, Note: "the payload is real", ActorName: "Rita", At: now()})
	if err != nil || kept.DisputedAt != nil || kept.KeptAt == nil || kept.Status != core.StatusVerified {
		t.Fatalf("keep: %+v %v", kept, err)
	}
	if _, counts := state(); counts.Votes != 0 || counts.Disputed {
		t.Fatalf("after keep: %+v", counts)
	}
	if events(core.ChangeKept) != 1 {
		t.Fatal("no kept change")
	}
	evs, err := s.ReviewEvents(c, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	actions := ""
	for _, e := range evs {
		actions += e.Action + " "
	}
	if actions != "submit verify dispute keep " {
		t.Fatalf("review history: %q", actions)
	}
	if list, _ := s.ListDisputed(c, community.DisputeQuery{Limit: 10}); list.Total != 0 {
		t.Fatalf("still listed after keep: %+v", list)
	}
	// The same voters cannot reopen it; three new ones do.
	for _, u := range voters[:4] {
		if out := vote(u); out != community.SightingConflict {
			t.Fatalf("a second vote after keep: %s", out)
		}
	}
	// Once kept, fresh accounts without a record are not counted: three
	// of them do not reopen it.
	for _, u := range voters[4:7] {
		if out := vote(u); out != community.SightingAdded {
			t.Fatalf("a fresh account's vote: %s", out)
		}
	}
	if got, counts := state(); got.DisputedAt != nil || counts.Votes != 0 || counts.Disputed {
		t.Fatalf("fresh accounts after keep: %+v %+v", got.DisputedAt, counts)
	}
	// Voters with a verified report of their own count: with a third,
	// the dispute is open again.
	for i, u := range []core.User{voters[4], voters[5], voters[7]} {
		own := report(t, u.ID, core.TypeDomain, "", fmt.Sprintf("record-%d.voters.example", i))
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: own, Policy: noLimits}); err != nil {
			t.Fatal(err)
		}
		verify(t, s, own.ID, now())
	}
	vote(voters[7])
	if got, counts := state(); got.DisputedAt == nil || counts.Votes != 3 {
		t.Fatalf("voters with a record: %+v %+v", got.DisputedAt, counts)
	}
	if votes, err := s.DisputeVotes(c, th.ID); err != nil || len(votes) != 3 {
		t.Fatalf("the votes counted after keep: %d %v", len(votes), err)
	}
	// A withdrawal decides it too.
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: th.ID, Decision: core.DecisionReject, Note: "a false positive after all", ActorName: "Rita", At: now()}); err != nil {
		t.Fatal(err)
	}
	if got, _ := state(); got.DisputedAt != nil || got.Status != core.StatusRejected {
		t.Fatalf("after withdrawal: %+v", got)
	}
	if list, _ := s.ListDisputed(c, community.DisputeQuery{Limit: 10}); list.Total != 0 {
		t.Fatalf("a withdrawn report listed as disputed: %+v", list)
	}
	if _, err := s.ListDisputed(c, community.DisputeQuery{}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("no limit: %v", err)
	}
}
