package community

import (
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

func TestReviewPoints(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		from, to core.Status
		disputed bool
		kind     string
		points   int
	}{
		{core.StatusPending, core.StatusVerified, false, ReputationVerified, VerifiedPoints(core.SeverityCritical)},
		{core.StatusPending, core.StatusRejected, false, ReputationRejected, PointsRejected},
		{core.StatusVerified, core.StatusRejected, true, ReputationWithdrawn, PointsWithdrawn},
		{core.StatusVerified, core.StatusRejected, false, "", 0}, // withdrawn without a dispute: nothing
		{core.StatusRejected, core.StatusVerified, false, "", 0},
	} {
		e, ok := ReviewPoints("t1", core.SeverityCritical, c.from, c.to, c.disputed)
		if ok != (c.kind != "") || e.Kind != c.kind || e.Points != c.points || ok && e.Key != c.kind+":t1" {
			t.Errorf("%s → %s (disputed %v): %+v %v", c.from, c.to, c.disputed, e, ok)
		}
	}
}

func TestDisputeRules(t *testing.T) {
	t.Parallel()
	v, k := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	if VoteSince(&v, nil) != v || VoteSince(&v, &k) != k || VoteSince(&k, &v) != k || !VoteSince(nil, nil).IsZero() {
		t.Error("VoteSince: votes count from the last decision")
	}
	if VotersNeedRecord(nil) || !VotersNeedRecord(&k) {
		t.Error("VotersNeedRecord: only once kept")
	}
	if OpensDispute(2, 3, false) || !OpensDispute(3, 3, false) || OpensDispute(3, 3, true) || OpensDispute(100, 0, false) {
		t.Error("OpensDispute: at the threshold, not twice, never with 0")
	}
}
