package core

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// TokenDisplay is how a token is shown after it was issued: the fixed
// prefix and its last four characters, the only part stored.
func TokenDisplay(t Token) string {
	return fmt.Sprintf("%s…%s", TokenPrefix, t.Hint)
}

// TokenUse records when API tokens were last used, to the minute: the
// request path marks a token at most once a minute without a lock, and
// Flush writes the marks to storage in the background.
type TokenUse struct {
	store   AccountStore
	seen    sync.Map // token id → *atomic.Int64 (the minute last marked)
	mu      sync.Mutex
	pending map[string]time.Time
	now     func() time.Time
}

// NewTokenUse returns a recorder over store.
func NewTokenUse(store AccountStore) *TokenUse {
	return &TokenUse{store: store, pending: map[string]time.Time{}, now: time.Now}
}

// Used marks a token used now.
func (u *TokenUse) Used(tokenID string) {
	now := u.now().UTC().Truncate(time.Minute)
	minute := now.Unix() / 60
	v, ok := u.seen.Load(tokenID)
	if !ok {
		v, _ = u.seen.LoadOrStore(tokenID, new(atomic.Int64))
	}
	// A plain load first: the same token's requests of one minute only
	// read the shared word (a swap on every request would bounce its cache
	// line between cores).
	if last := v.(*atomic.Int64); last.Load() == minute || last.Swap(minute) == minute {
		return
	}
	u.mu.Lock()
	u.pending[tokenID] = now
	u.mu.Unlock()
}

// Flush writes the pending marks (kept for the next flush on failure).
func (u *TokenUse) Flush(ctx context.Context) error {
	u.mu.Lock()
	pending := u.pending
	u.pending = map[string]time.Time{}
	u.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	if err := u.store.TokensUsed(ctx, pending); err != nil {
		u.mu.Lock()
		for id, at := range pending {
			if at.After(u.pending[id]) {
				u.pending[id] = at
			}
		}
		u.mu.Unlock()
		return err
	}
	return nil
}
