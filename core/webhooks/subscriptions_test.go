package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/webhooks"
	"github.com/threatd/threatd/storage/storagetest"
)

// TestSubscriptions: the rules and messages every caller (CLI, web) gets
// from the one use case, on a real store.
func TestSubscriptions(t *testing.T) {
	ctx := context.Background()
	s := webhooks.Subscriptions{Store: storagetest.OpenSQLite(t), AllowPrivate: true}
	var fe *core.FieldError
	if _, err := s.Add(ctx, webhooks.NewSubscription{URL: "ftp://x.example/"}); !errors.As(err, &fe) || fe.Field != "url" {
		t.Fatalf("an ftp target: %v", err)
	}
	if _, err := (webhooks.Subscriptions{Store: s.Store}).Add(ctx, webhooks.NewSubscription{URL: "http://127.0.0.1:9/"}); !errors.As(err, &fe) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("a loopback target without allow_private: %v", err)
	}
	first, err := s.Add(ctx, webhooks.NewSubscription{URL: "https://hooks.example/a", Events: []string{"threat.verified"}, CreatedBy: "cli"})
	if err != nil || !strings.HasPrefix(first.Secret, "whsec_") {
		t.Fatalf("add: %+v %v", first, err)
	}
	for i := 1; i < webhooks.MaxWebhooks; i++ {
		if _, err := s.Add(ctx, webhooks.NewSubscription{URL: fmt.Sprintf("https://hooks.example/%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Add(ctx, webhooks.NewSubscription{URL: "https://hooks.example/one-too-many"})
	if !errors.Is(err, core.ErrLimit) || err.Error() != fmt.Sprintf("at most %d webhook subscriptions: remove one first", webhooks.MaxWebhooks) {
		t.Fatalf("past the limit: %v", err)
	}
	if err := s.Remove(ctx, "no-such-id"); !errors.Is(err, core.ErrNotFound) || !strings.HasPrefix(err.Error(), "no webhook subscription no-such-id") {
		t.Fatalf("remove an unknown id: %v", err)
	}
	if _, err := s.Attempts(ctx, "no-such-id", 10); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("attempts of an unknown id: %v", err)
	}
	if err := s.Remove(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(ctx); len(list) != webhooks.MaxWebhooks-1 {
		t.Fatalf("%d left", len(list))
	}
}
