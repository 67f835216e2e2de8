package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// testSessions: a session resolves to its user until it expires or is
// deleted; a new password ends every session of the user.
func testSessions(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	u := user(t, s, "web@example.com")
	if u.PasswordHash != "" {
		t.Fatalf("new user has a password hash %q", u.PasswordHash)
	}
	u, err := s.SetPassword(ctx(t), core.PasswordReset{Email: u.Email, Hash: "$argon2id$stored"})
	if err != nil || u.PasswordHash != "$argon2id$stored" {
		t.Fatalf("SetPassword: %+v, %v", u, err)
	}
	if got, _ := s.UserByEmail(ctx(t), u.Email); got.PasswordHash != "$argon2id$stored" {
		t.Fatalf("UserByEmail after SetPassword: hash %q", got.PasswordHash)
	}
	if _, err := s.SetPassword(ctx(t), core.PasswordReset{Email: "nobody@example.com", Hash: "x"}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("SetPassword of an unknown user: %v, want ErrNotFound", err)
	}

	start := now()
	live := core.Session{Hash: core.HashSessionSecret("a"), UserID: u.ID, CreatedAt: start, ExpiresAt: start.Add(time.Hour)}
	expired := core.Session{Hash: core.HashSessionSecret("b"), UserID: u.ID, CreatedAt: start.Add(-2 * time.Hour), ExpiresAt: start.Add(-time.Hour)}
	for _, ses := range []core.Session{live, expired} {
		if err := s.CreateSession(ctx(t), ses); err != nil {
			t.Fatal(err)
		}
	}
	owner, err := s.SessionUser(ctx(t), live.Hash)
	ses, su := owner.Session, owner.User
	if err != nil || su.ID != u.ID || su.Email != u.Email || !ses.ExpiresAt.Equal(live.ExpiresAt) || ses.UserID != u.ID {
		t.Fatalf("SessionUser: %+v %+v %v", ses, su, err)
	}
	if _, err := s.SessionUser(ctx(t), expired.Hash); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("an expired session: %v, want ErrNotFound", err)
	}
	if err := s.CreateSession(ctx(t), core.Session{Hash: core.HashSessionSecret("c"), UserID: "no-such-user", CreatedAt: start, ExpiresAt: start.Add(time.Hour)}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a session of an unknown user: %v, want ErrNotFound", err)
	}
	if err := s.DeleteSession(ctx(t), live.Hash); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionUser(ctx(t), live.Hash); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a deleted session: %v, want ErrNotFound", err)
	}
	if err := s.DeleteSession(ctx(t), live.Hash); err != nil {
		t.Fatalf("deleting a deleted session: %v", err)
	}

	other := core.Session{Hash: core.HashSessionSecret("d"), UserID: u.ID, CreatedAt: start, ExpiresAt: start.Add(time.Hour)}
	if err := s.CreateSession(ctx(t), other); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPassword(ctx(t), core.PasswordReset{Email: u.Email, Hash: "$argon2id$new"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionUser(ctx(t), other.Hash); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a session after a password change: %v, want ErrNotFound", err)
	}
}

// testUserTokens: a user's token list, revocation by id (only one's own),
// and last-use times that only move forward.
func testUserTokens(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	alice, bob := user(t, s, "alice@example.com"), user(t, s, "bob@example.com")
	var ids []string
	for range 3 {
		tok, _ := newToken(alice.ID)
		if _, err := s.CreateToken(ctx(t), tok); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tok.ID)
		time.Sleep(2 * time.Millisecond) // distinct creation times
	}
	bobs, _ := newToken(bob.ID)
	if _, err := s.CreateToken(ctx(t), bobs); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListTokens(ctx(t), alice.ID)
	if err != nil || len(list) != 3 {
		t.Fatalf("ListTokens: %d tokens, %v", len(list), err)
	}
	for i, tok := range list {
		if tok.ID != ids[2-i] || tok.UserID != alice.ID || tok.LastUsedAt != nil || tok.Revoked() {
			t.Fatalf("token %d: %+v, want %s, newest first, never used", i, tok, ids[2-i])
		}
	}
	if _, err := s.RevokeUserToken(ctx(t), core.UserToken{UserID: alice.ID, TokenID: bobs.ID}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("revoking another user's token: %v, want ErrNotFound", err)
	}
	if _, err := s.Authenticate(ctx(t), bobs.Hash); err != nil {
		t.Fatalf("bob's token after alice's attempt: %v", err)
	}
	rev, err := s.RevokeUserToken(ctx(t), core.UserToken{UserID: alice.ID, TokenID: ids[0]})
	if err != nil || !rev.Revoked() {
		t.Fatalf("RevokeUserToken: %+v, %v", rev, err)
	}

	at := now().Truncate(time.Second)
	if err := s.TokensUsed(ctx(t), map[string]time.Time{ids[1]: at, ids[2]: at}); err != nil {
		t.Fatal(err)
	}
	if err := s.TokensUsed(ctx(t), map[string]time.Time{ids[1]: at.Add(-time.Hour), "unknown": at}); err != nil {
		t.Fatal(err)
	}
	list, _ = s.ListTokens(ctx(t), alice.ID)
	for _, tok := range list {
		switch tok.ID {
		case ids[0]:
			if !tok.Revoked() || tok.LastUsedAt != nil {
				t.Fatalf("revoked token: %+v", tok)
			}
		default:
			if tok.LastUsedAt == nil || !tok.LastUsedAt.Equal(at) {
				t.Fatalf("token %s last used %v, want %v (an older time never overwrites)", tok.ID, tok.LastUsedAt, at)
			}
		}
	}
}

// testListSubmissions: a user's reports newest first, paged, with the total.
func testListSubmissions(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	alice, bob := user(t, s, "alice@example.com"), user(t, s, "bob@example.com")
	var want []string
	for i := range 5 {
		th := report(t, alice.ID, core.TypeDomain, "", "evil"+string(rune('a'+i))+".example")
		th.CreatedAt = now().Add(time.Duration(i) * time.Second)
		create(t, s, th)
		want = append([]string{th.ID}, want...)
	}
	create(t, s, report(t, bob.ID, core.TypeDomain, "", "bob.example"))
	var got []string
	for off := 0; off < 6; off += 2 {
		sl, err := s.ListSubmissions(ctx(t), core.SubmissionQuery{UserID: alice.ID, Offset: off, Limit: 2})
		page, total := sl.Threats, sl.Total
		if err != nil || total != 5 {
			t.Fatalf("ListSubmissions(%d): total %d, %v", off, total, err)
		}
		for _, th := range page {
			if th.SubmitterID != alice.ID || th.Details.ThreatDescription == "" {
				t.Fatalf("a listed report is not alice's or has no details: %+v", th)
			}
			got = append(got, th.ID)
		}
	}
	if len(got) != 5 {
		t.Fatalf("pages held %d reports, want 5", len(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want newest first %v", got, want)
		}
	}
}
