package core

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
)

// Signer signs and checks the opaque page positions the service hands out
// (the paid feeds' cursors, TAXII's next) with the "cursor" secret every
// daemon on the database shares, so that a position cannot be edited or
// moved to another query.
type Signer struct {
	store OperationsStore

	mu  sync.Mutex
	key []byte
}

// NewSigner returns a Signer keyed by store's "cursor" secret.
func NewSigner(store OperationsStore) *Signer { return &Signer{store: store} }

// secret returns the signing key; a failure is not cached.
func (s *Signer) secret(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	v, err := s.store.Secret(ctx, "cursor")
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("cursor secret: %w", err)
	}
	s.key = key
	return key, nil
}

// Sign returns body and its MAC as "<body>.<mac>", both base64url.
func (s *Signer) Sign(ctx context.Context, body []byte) (string, error) {
	key, err := s.secret(ctx)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Open returns the body of a value Sign gave out; ok is false for anything
// else (edited, truncated, or signed with another key).
func (s *Signer) Open(ctx context.Context, v string) (body []byte, ok bool, err error) {
	body64, sig64, found := strings.Cut(v, ".")
	// Strict: the unused bits of a last character must be zero, so that no
	// two spellings of one value are accepted.
	body, err1 := base64.RawURLEncoding.Strict().DecodeString(body64)
	sig, err2 := base64.RawURLEncoding.Strict().DecodeString(sig64)
	if !found || err1 != nil || err2 != nil {
		return nil, false, nil
	}
	key, err := s.secret(ctx)
	if err != nil {
		return nil, false, err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), sig) {
		return nil, false, nil
	}
	return body, true, nil
}
