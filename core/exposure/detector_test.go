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
	"github.com/threatd/threatd/storage/storagetest"
)

// TestDetectorReadsAgainWhatItsQueueCouldNotHold: an import verifies more
// reports at once than the detector's queue holds; those that did not fit
// are read again from the feed, and every served version of them becomes
// an exposure (a real SQLite store).
func TestDetectorReadsAgainWhatItsQueueCouldNotHold(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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
	reports := core.NewReports(st, core.Limits{})
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	const n = 7
	var ids []string
	for i := range n {
		name := fmt.Sprintf("imported-%d", i)
		if err := st.RecordLedger(ctx, []firewall.LedgerEntry{{Ecosystem: "npm", Name: name, Version: "1.0.0", Purl: "pkg:npm/" + name + "@1.0.0",
			User: "dev@example.com", TokenID: "tok", ClientIP: "10.0.0.1", Day: day, First: now, Last: now, Count: 1}}); err != nil {
			t.Fatal(err)
		}
		s := core.Submission{ReportType: ptr("package"), ResourceIdentifier: &name, Registry: ptr("npm"), ThreatDescription: ptr("x"), VersionInfo: ptr("1.0.0")}
		th, err := reports.Submit(ctx, p, s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reports.Decide(ctx, th.ID, 0, core.DecisionVerify, "", nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}
	items, err := st.Feed(ctx, core.FeedQuery{From: now.Add(-time.Minute), To: time.Now().UTC().Add(time.Second), Kind: core.ChangeVerified, Limit: 100})
	if err != nil || len(items) != n {
		t.Fatalf("feed: %d items, %v", len(items), err)
	}
	d := exposure.NewDetectorQueue(st, slog.New(slog.DiscardHandler), 2)
	d.Feed = st
	d.ReportsChanged(core.ChangeBatch{Published: items}) // 2 queued, 5 not
	go d.Run(ctx)
	for _, id := range ids {
		deadline := time.Now().Add(20 * time.Second)
		for {
			c, err := st.ExposureCount(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if c == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("report %s has %d exposures, want 1", id, c)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func ptr(s string) *string { return &s }
