package index

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"

	"github.com/threatd/threatd/core"
)

// Principals caches authenticated callers by token hash, so that the token
// look-up in front of every request does not cross to storage. Entries are
// dropped when the change feed reports their token or user changed; unknown
// tokens are remembered for at most the freshness bound (a token issued by
// another process is accepted within it).
type Principals struct {
	accounts *core.Accounts

	mu      sync.Mutex
	gen     uint64                         // bumped by every invalidation
	byHash  map[string]*core.Principal     // shared, never changed: replaced
	byToken map[string]string              // token id → hash
	byUser  map[string]map[string]struct{} // user id → hashes

	unknown *expirable.LRU[string, struct{}]
}

// NewPrincipals returns a cache in front of accounts; freshness bounds how
// long an unknown token is remembered.
func NewPrincipals(accounts *core.Accounts, freshness time.Duration) *Principals {
	return &Principals{
		accounts: accounts,
		byHash:   make(map[string]*core.Principal),
		byToken:  make(map[string]string),
		byUser:   make(map[string]map[string]struct{}),
		unknown:  expirable.NewLRU[string, struct{}](100_000, nil, freshness),
	}
}

// Authenticate resolves a presented token, from the cache when it can.
func (p *Principals) Authenticate(ctx context.Context, secret string) (core.Principal, error) {
	pr, err := p.AuthenticateShared(ctx, secret)
	if err != nil {
		return core.Principal{}, err
	}
	return *pr, nil
}

// AuthenticateShared is Authenticate answering with the cache's own
// principal, which the caller must not change: the API's middleware keeps
// the pointer for the request instead of a copy on the heap each time.
func (p *Principals) AuthenticateShared(ctx context.Context, secret string) (*core.Principal, error) {
	if !core.WellFormedToken(secret) {
		return nil, core.ErrUnauthenticated
	}
	// The hash is written on the stack and the map is read with it as
	// the key, which allocates nothing: a string of it is made only when
	// the token is not cached.
	var sum [core.TokenHashLen]byte
	hb := core.AppendTokenHash(sum[:0], secret)
	p.mu.Lock()
	pr, ok := p.byHash[string(hb)]
	gen := p.gen
	p.mu.Unlock()
	if ok {
		// The map lookup is by hash; compare again in constant time.
		if !core.TokenHashEqualBytes(pr.Token.Hash, hb) {
			return nil, core.ErrUnauthenticated
		}
		return pr, nil
	}
	hash := string(hb)
	if _, bad := p.unknown.Get(hash); bad {
		return nil, core.ErrUnauthenticated
	}
	got, err := p.accounts.Authenticate(ctx, secret)
	if errors.Is(err, core.ErrUnauthenticated) {
		p.unknown.Add(hash, struct{}{})
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	pr = &got
	p.mu.Lock()
	// Cache only if nothing was invalidated while we asked storage: the
	// answer could predate a revocation.
	if p.gen == gen {
		p.byHash[hash] = pr
		p.byToken[pr.Token.ID] = hash
		if p.byUser[pr.User.ID] == nil {
			p.byUser[pr.User.ID] = make(map[string]struct{})
		}
		p.byUser[pr.User.ID][hash] = struct{}{}
	}
	p.mu.Unlock()
	return pr, nil
}

// InvalidateToken forgets a token (revoked, or changed in any way).
func (p *Principals) InvalidateToken(tokenID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	if hash, ok := p.byToken[tokenID]; ok {
		p.drop(hash)
	}
}

// InvalidateUser forgets every token of a user (tier, role or limit changed).
func (p *Principals) InvalidateUser(userID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	for hash := range p.byUser[userID] {
		p.drop(hash)
	}
}

// NewTokens forgets the unknown-token memory (a token was created).
func (p *Principals) NewTokens() { p.unknown.Purge() }

func (p *Principals) drop(hash string) {
	pr, ok := p.byHash[hash]
	if !ok {
		return
	}
	delete(p.byHash, hash)
	delete(p.byToken, pr.Token.ID)
	if hs := p.byUser[pr.User.ID]; hs != nil {
		delete(hs, hash)
		if len(hs) == 0 {
			delete(p.byUser, pr.User.ID)
		}
	}
}
