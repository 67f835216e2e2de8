package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// testReputation: review decisions earn and cost points once each; a
// duplicate is counted; records, the leaderboard by period, the history
// and profiles by name read them; sightings earn nothing.
func testReputation(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	zoe := user(t, s, "zoe@example.com")
	mx := user(t, s, "max@example.com")
	sub := func(u core.User, name string, sev core.Severity) core.Threat {
		th := report(t, u.ID, core.TypePackage, "npm", name)
		th.Details.SeverityLevel = sev
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
			t.Fatal(err)
		}
		return th
	}
	high, low, bad := sub(zoe, "rep-high", core.SeverityHigh), sub(zoe, "rep-low", ""), sub(zoe, "rep-bad", "")
	old := sub(mx, "rep-old", core.SeverityCritical)
	verify(t, s, high.ID, now())
	verify(t, s, low.ID, now())
	verify(t, s, old.ID, now().Add(-400*24*time.Hour)) // earned over a year ago
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: bad.ID, Decision: core.DecisionReject, Note: "no", ActorName: "Rita", At: now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordDuplicate(c, core.Duplicate{UserID: zoe.ID, ThreatID: high.ID, At: now()}); err != nil {
		t.Fatal(err)
	}
	reps, err := s.Reputations(c, []string{zoe.ID, mx.ID})
	if err != nil || len(reps) != 2 {
		t.Fatalf("records: %+v %v", reps, err)
	}
	for _, r := range reps {
		switch r.UserID {
		case zoe.ID:
			if r.Points != 30+10-10 || r.Verified != 2 || r.Rejected != 1 || r.Duplicates != 1 {
				t.Fatalf("zoe: %+v", r)
			}
		case mx.ID:
			if r.Points != 40 || r.Verified != 1 {
				t.Fatalf("max: %+v", r)
			}
		}
	}
	board := func(since time.Time) []community.LeaderboardEntry {
		t.Helper()
		out, err := s.Leaderboard(c, community.LeaderboardQuery{Since: since, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if all := board(time.Time{}); len(all) != 2 || all[0].UserID != mx.ID || all[0].Points != 40 || all[1].Points != 30 || all[1].Verified != 2 {
		t.Fatalf("leaderboard, all: %+v", all)
	}
	if year := board(now().AddDate(0, 0, -365)); len(year) != 1 || year[0].UserID != zoe.ID {
		t.Fatalf("leaderboard, a year: %+v", year)
	}
	if _, err := s.Leaderboard(c, community.LeaderboardQuery{Limit: community.MaxLeaderboard + 1}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("a leaderboard past its bound: %v", err)
	}
	hist, err := s.ReputationHistory(c, community.HistoryQuery{UserID: zoe.ID, Limit: 10})
	if err != nil || len(hist) != 4 {
		t.Fatalf("history: %+v %v", hist, err)
	}
	kinds := map[string]int{}
	for _, e := range hist {
		kinds[e.Kind] += e.Points
	}
	if kinds[community.ReputationVerified] != 40 || kinds[community.ReputationRejected] != -10 || kinds[community.ReputationDuplicate] != 0 {
		t.Fatalf("history kinds: %v", kinds)
	}
	if us, err := s.UsersByName(c, zoe.Name); err != nil || len(us) != 1 || us[0].ID != zoe.ID {
		t.Fatalf("users by name %q: %+v %v", zoe.Name, us, err)
	}
	all, err := s.SubmitterRecordsAll(c)
	if err != nil || len(all) != 2 {
		t.Fatalf("all records: %+v %v", all, err)
	}
	for _, r := range all {
		if r.UserID == zoe.ID && (r.Verified != 2 || r.Rejected != 1 || r.Score() != 3) {
			t.Fatalf("zoe's record: %+v score %d", r, r.Score())
		}
	}
}
