package exposure_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/exposure"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/storage"
	"github.com/threatd/threatd/storage/storagetest"
)

// reporter is a real SQLite store with a user whose reports it verifies.
type reporter struct {
	st      *storage.Store
	reports *core.Reports
	p       core.Principal
}

func newReporter(t *testing.T) reporter {
	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	acc := core.NewAccounts(st)
	if _, err := acc.AddUser(ctx, core.NewUser{Email: "imp@example.com"}); err != nil {
		t.Fatal(err)
	}
	secret, _, err := acc.IssueToken(ctx, "imp@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := acc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	return reporter{st: st, reports: core.NewReports(st, core.Limits{}), p: p}
}

// served counts name@1.0.0 served now, in the ledger.
func (r reporter) served(t *testing.T, name string) {
	now := time.Now().UTC()
	if err := r.st.RecordLedger(context.Background(), []firewall.LedgerEntry{{Ecosystem: "npm", Name: name, Version: "1.0.0", Purl: "pkg:npm/" + name + "@1.0.0",
		User: "dev@example.com", TokenID: "tok", ClientIP: "10.0.0.1", Day: now.Truncate(24 * time.Hour), First: now, Last: now, Count: 1}}); err != nil {
		t.Fatal(err)
	}
}

// verified is the id of a verified report of name@1.0.0.
func (r reporter) verified(t *testing.T, name string) string {
	ctx := context.Background()
	th, err := r.reports.Submit(ctx, r.p, core.Submission{ReportType: ptr("package"), ResourceIdentifier: &name, Registry: ptr("npm"), ThreatDescription: ptr("x"), VersionInfo: ptr("1.0.0")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.reports.Decide(ctx, th.ID, 0, core.DecisionVerify, "", nil); err != nil {
		t.Fatal(err)
	}
	return th.ID
}

// changes are the verifications of the minute before.
func (r reporter) changes(t *testing.T, n int) core.ChangeBatch {
	now := time.Now().UTC()
	items, err := r.st.Feed(context.Background(), core.FeedQuery{From: now.Add(-time.Minute), To: now.Add(time.Second), Kind: core.ChangeVerified, Limit: 100})
	if err != nil || len(items) != n {
		t.Fatalf("feed: %d items, %v", len(items), err)
	}
	return core.ChangeBatch{Published: items}
}

// exposed waits for id's exposures to be want.
func (r reporter) exposed(t *testing.T, id string, want int64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		c, err := r.st.ExposureCount(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if c == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("report %s has %d exposures, want %d", id, c, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDetectorReadsAgainWhatItsQueueCouldNotHold: an import verifies more
// reports at once than the detector's queue holds; those that did not fit
// are read again from the feed, and every served version of them becomes
// an exposure (a real SQLite store).
func TestDetectorReadsAgainWhatItsQueueCouldNotHold(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newReporter(t)
	const n = 7
	var ids []string
	for i := range n {
		name := fmt.Sprintf("imported-%d", i)
		r.served(t, name)
		ids = append(ids, r.verified(t, name))
	}
	d := exposure.NewDetectorQueue(r.st, slog.New(slog.DiscardHandler), 2)
	d.Feed = r.st
	d.ReportsChanged(r.changes(t, n)) // 2 queued, 5 not
	go d.Run(ctx)
	for _, id := range ids {
		r.exposed(t, id, 1, 20*time.Second)
	}
}

// TestDetectorLooksAgain: a version served in the second of its report's
// verification reaches the ledger after the detector's first look; the
// second look, Settle after the change, finds it.
func TestDetectorLooksAgain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newReporter(t)
	r.served(t, "first-pkg")
	first, late := r.verified(t, "first-pkg"), r.verified(t, "late-pkg")
	d := exposure.NewDetectorQueue(r.st, slog.New(slog.DiscardHandler), 10)
	d.Settle = 2 * time.Second
	d.ReportsChanged(r.changes(t, 2))
	go d.Run(ctx)
	// The first report's look is done, so the second's (next in the
	// queue) is too, a moment later: late-pkg had no row then.
	r.exposed(t, first, 1, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	r.served(t, "late-pkg")
	r.exposed(t, late, 1, 10*time.Second)
}

func ptr(s string) *string { return &s }

// TestDetectorStartsFromTheMark: a detector that starts reads the changes
// since the mark another daemon left, not the whole day before (an import
// of a million reports is read once, not at every start), and moves the
// mark past what it read.
func TestDetectorStartsFromTheMark(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newReporter(t)
	r.served(t, "before-pkg")
	before := r.verified(t, "before-pkg")
	time.Sleep(10 * time.Millisecond)
	mark := time.Now().UTC().Add(2 * time.Second) // past the second read again
	if err := r.st.MoveExposureMark(ctx, mark); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	r.served(t, "after-pkg")
	after := r.verified(t, "after-pkg")
	d := exposure.NewDetectorQueue(r.st, slog.New(slog.DiscardHandler), 10)
	d.Feed, d.CatchUp = r.st, 24*time.Hour
	go d.Run(ctx)
	r.exposed(t, after, 1, 10*time.Second)
	r.exposed(t, before, 0, 0)
	// The mark moves once the page's exposures are recorded.
	deadline := time.Now().Add(10 * time.Second)
	for {
		at, err := r.st.ExposureMark(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if at.After(mark.Add(time.Millisecond)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mark %v, want after %v", at, mark)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
