package main_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
)

// TestWebhookSlowReceiverIsolated: a receiver that holds every delivery
// open (until the test lets go) delays no other subscription: the fast
// receiver gets all 40 events while the slow one still holds its first,
// and the slow one gets its events once it answers.
func TestWebhookSlowReceiverIsolated(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var slowArrived atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slowArrived.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(slow.Close)
	var released atomic.Bool
	t.Cleanup(func() {
		if released.CompareAndSwap(false, true) {
			close(release)
		}
	})
	fast := newReceiver(t)
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\nwebhooks:\n  allow_private: true\n  poll: 50ms\n  timeout: 5m\n  concurrency: 8\n")
	tok := in.user("isolated@example.com", "--tier", "paid")
	addWebhook(t, in, "--url", slow.URL+"/slow")
	addWebhook(t, in, "--url", fast.srv.URL+"/fast")
	d := in.serve()
	var ids []string
	for i := range 40 {
		ids = append(ids, d.submit(tok, pkg(fmt.Sprintf("isolated-%d", i))))
	}
	for _, id := range ids {
		in.mustCLI("review", "verify", id)
	}
	defer func() {
		if t.Failed() {
			t.Logf("fast got %d deliveries, slow %d arrivals\n%s\n%s", len(fast.deliveries()), slowArrived.Load(), in.mustCLI("webhook", "list"), d.logText())
		}
	}()
	apitest.Eventually(t, "the fast receiver to get all 40 events while the slow one holds its deliveries", 30*time.Second, func() bool {
		for _, id := range ids {
			if len(fast.delivered("threat.verified", id)) == 0 {
				return false
			}
		}
		return true
	})
	if n := slowArrived.Load(); n == 0 || n > 2 {
		t.Fatalf("the slow receiver holds %d deliveries at once, want 1 or 2 (one subscription's share)", n)
	}
	released.Store(true)
	close(release)
	apitest.Eventually(t, "the slow receiver to get its 40 events once it answers", 90*time.Second, func() bool { return slowArrived.Load() >= 40 })
}
