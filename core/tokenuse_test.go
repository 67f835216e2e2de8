package core

import (
	"context"
	"testing"
	"time"
)

// usedStore records what TokenUse writes.
type usedStore struct {
	AccountStore
	got map[string]time.Time
}

func (s *usedStore) TokensUsed(_ context.Context, used map[string]time.Time) error {
	for id, at := range used {
		s.got[id] = at
	}
	return nil
}

// TestTokenUse: a token is marked once a minute, whatever its requests.
func TestTokenUse(t *testing.T) {
	st := &usedStore{got: map[string]time.Time{}}
	u := NewTokenUse(st)
	now := time.Date(2026, 11, 23, 10, 0, 30, 0, time.UTC)
	u.now = func() time.Time { return now }
	for range 100 {
		u.Used("a")
	}
	if len(u.pending) != 1 || !u.pending["a"].Equal(now.Truncate(time.Minute)) {
		t.Fatalf("pending after 100 uses in one minute: %v", u.pending)
	}
	if err := u.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	u.Used("a")
	if len(u.pending) != 0 {
		t.Fatalf("a use in the minute already written was marked again: %v", u.pending)
	}
	now = now.Add(time.Minute)
	u.Used("a")
	if err := u.Flush(context.Background()); err != nil || !st.got["a"].Equal(now.Truncate(time.Minute)) {
		t.Fatalf("next minute: %v, %v", st.got, err)
	}
}

// BenchmarkTokenUse is the cost TokenUse adds to every authenticated
// request (the same token from every core).
func BenchmarkTokenUse(b *testing.B) {
	u := NewTokenUse(&usedStore{got: map[string]time.Time{}})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			u.Used("token-id")
		}
	})
}
