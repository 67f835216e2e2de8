package storagetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/core/webhooks"
)

func webhook(t *testing.T, s port.Store, events []string, eco string) webhooks.Webhook {
	t.Helper()
	w, err := webhooks.NewWebhook("https://siem.example.com/hook", events, eco, "contract", now(), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateWebhook(ctx(t), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// testWebhooks: publishing a change queues it, in its transaction, for
// every subscription that wants it; attempts move a delivery through its
// states; queues are bounded and listed.
func testWebhooks(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "hooks@example.com")
	all := webhook(t, s, nil, "")
	npmWithdrawn := webhook(t, s, []string{webhooks.EventWithdrawn}, "npm")
	pypi := webhook(t, s, nil, "pypi")

	npm := report(t, u.ID, core.TypePackage, "npm", "hooked-pkg")
	dom := report(t, u.ID, core.TypeDomain, "", "hooked.example.com")
	create(t, s, npm, dom)
	if q, err := s.WebhookQueue(c); err != nil || q.Pending != 0 {
		t.Fatalf("pending reports queue nothing: %+v %v", q, err)
	}
	verify(t, s, npm.ID, now())
	verify(t, s, dom.ID, now())
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: npm.ID, Decision: core.DecisionReject, ActorName: "Rita", Note: "a mistake", At: now()}); err != nil {
		t.Fatal(err)
	}
	due, err := s.DueDeliveries(c, webhooks.DueQuery{Now: time.Now().Add(time.Second), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, d := range due {
		got[d.WebhookID] = append(got[d.WebhookID], d.Kind+":"+d.ThreatID)
		if d.Webhook.URL == "" || d.Webhook.Secret != map[string]string{all.ID: all.Secret, npmWithdrawn.ID: npmWithdrawn.Secret}[d.WebhookID] || d.State != webhooks.DeliveryPending || d.Payload != nil {
			t.Fatalf("delivery %+v", d)
		}
	}
	want := map[string][]string{
		all.ID:          {"verified:" + npm.ID, "verified:" + dom.ID, "withdrawn:" + npm.ID},
		npmWithdrawn.ID: {"withdrawn:" + npm.ID},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("queued %v, want %v (pypi subscription %s gets none)", got, want, pypi.ID)
	}
	if _, err := s.DueDeliveries(c, webhooks.DueQuery{Now: time.Now(), Limit: 0}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("limit 0: %v", err)
	}
	// The subscriptions the dispatcher is busy with are left out.
	rest, err := s.DueDeliveries(c, webhooks.DueQuery{Now: time.Now().Add(time.Second), Limit: 100, Except: []string{all.ID}})
	if err != nil || len(rest) != 1 || rest[0].WebhookID != npmWithdrawn.ID {
		t.Fatalf("due except %s: %+v %v", all.ID, rest, err)
	}

	// First attempt fails: payload kept, next attempt planned, the
	// subscription failing.
	d := due[0]
	at := now()
	if err := s.RecordAttempt(c, webhooks.AttemptOutcome{Attempt: webhooks.DeliveryAttempt{WebhookID: d.WebhookID, Seq: d.Seq, At: at, Status: 500, Latency: 1500 * time.Microsecond, Error: "HTTP 500", State: webhooks.DeliveryPending},
		NextAt: at.Add(time.Hour), Payload: []byte(`{"type":"threat.verified"}`)}); err != nil {
		t.Fatal(err)
	}
	later, _ := s.DueDeliveries(c, webhooks.DueQuery{Now: time.Now().Add(time.Second), Limit: 100})
	for _, l := range later {
		if l.WebhookID == d.WebhookID && l.Seq == d.Seq {
			t.Fatal("a delivery planned for later is due now")
		}
	}
	later, _ = s.DueDeliveries(c, webhooks.DueQuery{Now: at.Add(2 * time.Hour), Limit: 100})
	var again webhooks.Delivery
	for _, l := range later {
		if l.WebhookID == d.WebhookID && l.Seq == d.Seq {
			again = l
		}
	}
	if string(again.Payload) != `{"type":"threat.verified"}` || again.Attempts != 1 || !again.Webhook.FailingSince.Equal(at) {
		t.Fatalf("after a failed attempt: %+v", again)
	}
	// Second attempt delivers; a late record of the same delivery changes nothing.
	ok := webhooks.AttemptOutcome{Attempt: webhooks.DeliveryAttempt{WebhookID: d.WebhookID, Seq: d.Seq, At: at.Add(time.Second), Status: 204, State: webhooks.DeliveryDelivered}}
	if err := s.RecordAttempt(c, ok); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordAttempt(c, ok); err != nil {
		t.Fatal(err)
	}
	attempts, err := s.WebhookAttempts(c, webhooks.AttemptQuery{WebhookID: all.ID, Limit: 10})
	if err != nil || len(attempts) != 2 || attempts[0].Status != 204 || attempts[0].State != webhooks.DeliveryDelivered ||
		attempts[1].Status != 500 || attempts[1].Error != "HTTP 500" || attempts[1].Latency != 1500*time.Microsecond || attempts[1].ThreatID != d.ThreatID || attempts[1].Kind != d.Kind {
		t.Fatalf("attempts %+v %v", attempts, err)
	}
	if _, err := s.WebhookAttempts(c, webhooks.AttemptQuery{WebhookID: "no-such-hook", Limit: 10}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("attempts of an unknown subscription: %v", err)
	}

	// A change's body is fixed by its first attempt for every subscription:
	// the other one's delivery of the withdrawal carries it too.
	for _, w := range due {
		if w.WebhookID == all.ID && w.Kind == core.ChangeWithdrawn {
			if err := s.RecordAttempt(c, webhooks.AttemptOutcome{Attempt: webhooks.DeliveryAttempt{WebhookID: w.WebhookID, Seq: w.Seq, At: at, Status: 502, Error: "HTTP 502", State: webhooks.DeliveryPending},
				NextAt: at, Payload: []byte(`{"type":"threat.withdrawn"}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	later, _ = s.DueDeliveries(c, webhooks.DueQuery{Now: at.Add(2 * time.Hour), Limit: 100})
	shared := 0
	for _, l := range later {
		if l.Kind == core.ChangeWithdrawn && string(l.Payload) == `{"type":"threat.withdrawn"}` {
			shared++
		}
	}
	if shared != 2 {
		t.Fatalf("the withdrawal's body reaches %d of its 2 deliveries", shared)
	}

	// Disabled: no longer due; its queue is bounded; enabled again, due.
	d2 := due[1]
	if err := s.RecordAttempt(c, webhooks.AttemptOutcome{Attempt: webhooks.DeliveryAttempt{WebhookID: d2.WebhookID, Seq: d2.Seq, At: now(), Error: "connection refused", State: webhooks.DeliveryPending},
		NextAt: now(), Disable: "failing for 24h"}); err != nil {
		t.Fatal(err)
	}
	if due, _ := s.DueDeliveries(c, webhooks.DueQuery{Now: time.Now().Add(time.Hour), Limit: 100}); len(due) != 1 || due[0].WebhookID != npmWithdrawn.ID {
		t.Fatalf("due with the subscription disabled: %+v", due)
	}
	hooks, err := s.ListWebhooks(c)
	if err != nil || len(hooks) != 3 || hooks[0].ID != all.ID || hooks[0].State() != "disabled" || hooks[0].DisabledReason != "failing for 24h" ||
		hooks[0].Pending != 2 || hooks[0].Delivered != 1 || hooks[1].Pending != 1 || hooks[2].Pending != 0 || hooks[0].Secret == "" {
		t.Fatalf("list %+v %v", hooks, err)
	}
	n, err := s.TrimWebhooks(c, webhooks.WebhookTrim{MaxPending: 1, FinishedBefore: time.Time{}})
	if err != nil || n != 1 {
		t.Fatalf("trim expired %d %v, want 1", n, err)
	}
	hooks, _ = s.ListWebhooks(c)
	if hooks[0].Pending != 1 || hooks[0].Expired != 1 || hooks[1].Pending != 1 {
		t.Fatalf("after trim: %+v", hooks[:2])
	}
	// Finished rows older than the cut go; the expiry stays counted.
	if _, err := s.TrimWebhooks(c, webhooks.WebhookTrim{MaxPending: 1, FinishedBefore: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	hooks, _ = s.ListWebhooks(c)
	if hooks[0].Delivered != 0 || hooks[0].Expired != 1 || hooks[0].Pending != 1 {
		t.Fatalf("after deleting finished deliveries: %+v", hooks[0])
	}
	// The delivery attempted last expired (the oldest pending one): its
	// attempt went with it; the withdrawal's, still pending, stays.
	if attempts, _ := s.WebhookAttempts(c, webhooks.AttemptQuery{WebhookID: all.ID, Limit: 10}); len(attempts) != 1 || attempts[0].Status != 502 {
		t.Fatalf("attempts of deleted deliveries remain: %+v", attempts)
	}
	w, err := s.EnableWebhook(c, all.ID)
	if err != nil || w.State() != "active" {
		t.Fatalf("enable: %+v %v", w, err)
	}
	if due, _ := s.DueDeliveries(c, webhooks.DueQuery{Now: time.Now().Add(time.Second), Limit: 100}); len(due) != 2 {
		t.Fatalf("due after enabling: %+v", due)
	}
	if q, err := s.WebhookQueue(c); err != nil || q.Pending != 2 || q.Oldest.IsZero() {
		t.Fatalf("queue %+v %v", q, err)
	}
	if err := s.DeleteWebhook(c, all.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteWebhook(c, all.ID); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.EnableWebhook(c, all.ID); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("enable a removed one: %v", err)
	}
	if q, _ := s.WebhookQueue(c); q.Pending != 1 {
		t.Fatalf("queue after removal: %+v", q)
	}
	for range webhooks.MaxWebhooks - 2 {
		webhook(t, s, nil, "")
	}
	extra, _ := webhooks.NewWebhook("https://one.too.many.example/", nil, "", "contract", now(), false)
	if err := s.CreateWebhook(c, extra); !errors.Is(err, core.ErrLimit) {
		t.Fatalf("subscription %d: %v", webhooks.MaxWebhooks+1, err)
	}
}
