package index_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/ioc"
)

// batches records what a subscriber heard.
type batches struct {
	mu  sync.Mutex
	got []core.ChangeBatch
}

func (b *batches) ReportsChanged(c core.ChangeBatch) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, c)
}

// The one fan-out: every subscriber hears, in order, the reports a page of
// changes named and the changes published after the follower's first
// catch-up, each with its report and its stored indicators (the ones
// storage derived when the report was stored: nothing derives them again).
func TestFollowerFansOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := newSubmitter(t, "fan@example.com")
	submit := func(domain string) core.Threat {
		th, err := sb.reports.Submit(ctx, sb.p, core.Submission{ReportType: ptr("domain"), ResourceIdentifier: ptr(domain), ThreatDescription: ptr("C2 at http://" + domain + "/gate")})
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	before := submit("before.invalid")
	if _, err := sb.reports.Decide(ctx, before.ID, 0, core.DecisionVerify, "", nil); err != nil {
		t.Fatal(err)
	}
	idx := index.New(sb.st, 100)
	if err := idx.Load(ctx); err != nil {
		t.Fatal(err)
	}
	one, two := &batches{}, &batches{}
	f := &index.Follower{Store: sb.st, Index: idx, Principals: index.NewPrincipals(sb.acc, time.Second), Log: slog.New(slog.DiscardHandler),
		Subscribers: []index.Subscriber{one, two}}
	if err := f.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	after := submit("after.invalid")
	if _, err := sb.reports.Decide(ctx, after.ID, 0, core.DecisionVerify, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.reports.Decide(ctx, before.ID, 0, core.DecisionReject, "withdrawn", nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(one.got, two.got, func(a, b core.ChangeBatch) bool {
		return slices.Equal(a.Changed, b.Changed) && len(a.Published) == len(b.Published)
	}) {
		t.Fatalf("the subscribers heard different batches: %+v / %+v", one.got, two.got)
	}
	var changed []string
	var published []core.FeedItem
	for _, b := range one.got {
		if len(b.Changed) > 0 && len(b.Published) > 0 {
			t.Fatalf("a batch holds both halves: %+v", b)
		}
		changed, published = append(changed, b.Changed...), append(published, b.Published...)
	}
	if !slices.Contains(changed, after.ID) || !slices.Contains(changed, before.ID) {
		t.Errorf("changed reports heard: %v (want %s and %s)", changed, after.ID, before.ID)
	}
	if len(published) != 2 || published[0].Event.Kind != core.ChangeVerified || published[0].Threat.ID != after.ID ||
		published[1].Event.Kind != core.ChangeWithdrawn || published[1].Threat.ID != before.ID {
		t.Fatalf("published changes heard (only those after the first catch-up, in order): %+v", published)
	}
	if !slices.ContainsFunc(published[0].Threat.IOCs, func(i ioc.IOC) bool { return i.Type == ioc.URL && i.Value == "http://after.invalid/gate" }) {
		t.Errorf("the verified report came without its stored indicators: %+v", published[0].Threat.IOCs)
	}
	if published[1].Threat.Status == core.StatusVerified {
		t.Errorf("the withdrawn report as now stored: %s", published[1].Threat.Status)
	}
}
