package storagetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// testAccountChanges: ChangeAccount renames, changes the password keeping
// one session, ends the other sessions, disables (every token revoked and
// every session ended, in the change feed) and enables, and deletes: the
// pending reports and revisions withdrawn, the verified report kept under
// the new name, the contact e-mail gone, the e-mail free again.
func testAccountChanges(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "acct@example.com")
	other := user(t, s, "other@example.com")
	start := now()
	session := func(secret string, user core.User) string {
		t.Helper()
		h := core.HashSessionSecret(secret)
		if err := s.CreateSession(c, core.Session{Hash: h, UserID: user.ID, CreatedAt: start, ExpiresAt: start.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	live := func(h string) bool {
		_, err := s.SessionUser(c, h)
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	a, b2, c3 := session("a", u), session("b", u), session("c", u)
	theirs := session("o", other)

	name := "Acct Ré"
	got, err := s.ChangeAccount(c, core.AccountChange{UserID: u.ID, Name: &name, At: now()})
	if err != nil || got.User.Name != name || got.User.Email != u.Email || got.SessionsEnded != 0 {
		t.Fatalf("rename: %+v, %v", got, err)
	}
	if back, _ := s.UserByEmail(c, u.Email); back.Name != name {
		t.Fatalf("renamed user reads back as %q", back.Name)
	}
	if sessions, err := s.ListSessions(c, u.ID); err != nil || len(sessions) != 3 {
		t.Fatalf("ListSessions: %d, %v", len(sessions), err)
	}

	hash := "$argon2id$changed"
	got, err = s.ChangeAccount(c, core.AccountChange{UserID: u.ID, PasswordHash: &hash, KeepSession: a, At: now()})
	if err != nil || got.User.PasswordHash != hash || got.SessionsEnded != 2 {
		t.Fatalf("password change: %+v, %v", got, err)
	}
	if !live(a) || live(b2) || live(c3) || !live(theirs) {
		t.Fatalf("after a password change keeping a: a %v b %v c %v other's %v", live(a), live(b2), live(c3), live(theirs))
	}
	d := session("d", u)
	got, err = s.ChangeAccount(c, core.AccountChange{UserID: u.ID, EndSessions: true, KeepSession: d, At: now()})
	if err != nil || got.SessionsEnded != 1 || live(a) || !live(d) {
		t.Fatalf("end other sessions: %+v, %v (a %v, d %v)", got, err, live(a), live(d))
	}

	// Disable: tokens revoked and sessions ended, in the change feed.
	tok, _ := newToken(u.ID)
	tok2, _ := newToken(u.ID)
	for _, tk := range []core.Token{tok, tok2} {
		if _, err := s.CreateToken(c, tk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RevokeToken(c, tok2.Hash); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Stats(c)
	yes, no := true, false
	got, err = s.ChangeAccount(c, core.AccountChange{UserID: u.ID, Disabled: &yes, At: now()})
	if err != nil || got.User.DisabledAt == nil || got.User.Active() || got.TokensRevoked != 1 || got.SessionsEnded != 1 || live(d) {
		t.Fatalf("disable: %+v, %v", got, err)
	}
	if _, err := s.Authenticate(c, tok.Hash); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a disabled user's token authenticates: %v", err)
	}
	changes, err := s.Changes(c, core.ChangeQuery{After: st.LastSeq, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, ch := range changes {
		seen = append(seen, string(ch.Entity)+"/"+ch.Op+"/"+ch.EntityID)
	}
	for _, want := range []string{"user/update/" + u.ID, "token/revoke/" + tok.ID} {
		if !slices.Contains(seen, want) {
			t.Fatalf("changes after disabling: %v, want %s", seen, want)
		}
	}
	if slices.Contains(seen, "token/revoke/"+tok2.ID) {
		t.Fatalf("the token revoked before was revoked again: %v", seen)
	}
	if back, _ := s.UserByEmail(c, u.Email); back.DisabledAt == nil || back.State() != "disabled" {
		t.Fatalf("disabled user reads back as %+v", back)
	}
	got, err = s.ChangeAccount(c, core.AccountChange{UserID: u.ID, Disabled: &no, At: now()})
	if err != nil || got.User.DisabledAt != nil || !got.User.Active() || got.TokensRevoked != 0 {
		t.Fatalf("enable: %+v, %v", got, err)
	}
	if _, err := s.Authenticate(c, tok.Hash); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("enabling brought a revoked token back: %v", err)
	}

	// Delete: one verified report with a contact e-mail, one pending
	// report, and a pending revision of another's verified report.
	kept := report(t, u.ID, core.TypePackage, "npm", "acct-kept")
	kept.Details.ContactEmail = "acct@example.com"
	gone := report(t, u.ID, core.TypePackage, "npm", "acct-pending")
	theirReport := report(t, other.ID, core.TypePackage, "npm", "acct-theirs")
	create(t, s, kept, gone, theirReport)
	verify(t, s, kept.ID, now())
	verify(t, s, theirReport.ID, now())
	_, rev, err := modifyThreat(c, s, core.Modification{ThreatID: theirReport.ID, AuthorID: u.ID, AuthorName: name,
		Patch: core.Patch{Submission: core.Submission{Publisher: ptr("someone")}}, At: now()}, noLimits)
	if err != nil || rev.State != core.RevisionPending {
		t.Fatalf("revision: %+v, %v", rev, err)
	}
	e := session("e", u)
	tok3, _ := newToken(u.ID)
	if _, err := s.CreateToken(c, tok3); err != nil {
		t.Fatal(err)
	}
	del := core.AccountDeletion{Email: "deleted-" + u.ID + "@deleted.invalid", Name: core.DeletedName, Note: "withdrawn: deleted", ActorName: core.DeletedName}
	got, err = s.ChangeAccount(c, core.AccountChange{UserID: u.ID, Delete: &del, At: now()})
	if err != nil || got.User.DeletedAt == nil || got.User.Email != del.Email || got.User.Name != core.DeletedName || got.User.PasswordHash != "" ||
		got.ReportsWithdrawn != 1 || got.RevisionsWithdrawn != 1 || got.TokensRevoked != 1 || got.SessionsEnded != 1 {
		t.Fatalf("delete: %+v, %v", got, err)
	}
	if live(e) {
		t.Fatal("a session outlived the account's deletion")
	}
	if _, err := s.Authenticate(c, tok3.Hash); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a deleted user's token authenticates: %v", err)
	}
	if th, err := s.GetThreat(c, gone.ID); err != nil || th.Status != core.StatusRejected {
		t.Fatalf("the pending report after deletion: %+v, %v", th.Status, err)
	}
	events, _ := s.ReviewEvents(c, gone.ID)
	if last := events[len(events)-1]; last.To != core.StatusRejected || last.Note != del.Note || last.ActorName != core.DeletedName {
		t.Fatalf("the withdrawal's event: %+v", last)
	}
	if th, err := s.GetThreat(c, kept.ID); err != nil || th.Status != core.StatusVerified || th.SubmitterID != u.ID || th.Details.ContactEmail != "" {
		t.Fatalf("the verified report after deletion: %+v, %v", th, err)
	}
	revs, _ := s.ListRevisions(c, theirReport.ID)
	if len(revs) != 1 || revs[0].State != core.RevisionRejected || revs[0].AuthorName != core.DeletedName {
		t.Fatalf("the pending revision after deletion: %+v", revs)
	}
	if _, err := s.UserByEmail(c, "acct@example.com"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("the deleted user is still found by e-mail: %v", err)
	}
	if again := user(t, s, "acct@example.com"); again.ID == u.ID {
		t.Fatal("the e-mail of a deleted account is not free again")
	}
	if _, err := s.ChangeAccount(c, core.AccountChange{UserID: u.ID, Name: &name, At: now()}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("changing a deleted account: %v, want ErrNotFound", err)
	}
	if _, err := s.ChangeAccount(c, core.AccountChange{UserID: "no-such-user", Name: &name, At: now()}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("changing an unknown account: %v, want ErrNotFound", err)
	}
	if !live(theirs) {
		t.Fatal("another user's session ended")
	}
}
