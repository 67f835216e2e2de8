// Package storagetest is the storage contract: the test suite every storage
// backend must pass, run through the backend's real plugin process. A new
// backend passes it or is not done.
package storagetest

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/port"
)

// Backend opens the database named db (created empty on first use; the same
// name opens the same database again, e.g. after a restart) with the given
// storage.settings, and returns a migrated store, or the error that refused
// it. The suite closes what it opens.
type Backend func(t *testing.T, db string, settings map[string]string) (port.Store, error)

// Run runs the whole contract against backend.
func Run(t *testing.T, backend Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"Migrations", testMigrations},
		{"Users", testUsers},
		{"UserLimit", testUserLimit},
		{"UserAccess", testUserAccess},
		{"Tokens", testTokens},
		{"ChangeFeed", testChangeFeed},
		{"ConcurrentDuplicateUser", testConcurrentDuplicateUser},
		{"ChangeFeedConcurrentWriters", testChangeFeedConcurrentWriters},
		{"Reopen", testReopen},
		{"ThreatRoundTrip", testThreatRoundTrip},
		{"Duplicates", testDuplicates},
		{"ConcurrentDuplicates", testConcurrentDuplicates},
		{"NewUserCap", testNewUserCap},
		{"NewUserCapConcurrent", testNewUserCapConcurrent},
		{"HourlyLimitConcurrent", testHourlyLimitConcurrent},
		{"RollbackOnFailedStep", testRollbackOnFailedStep},
		{"Review", testReview},
		{"LatestVerified", testLatestVerified},
		{"VerifiedSummaries", testVerifiedSummaries},
		{"Modify", testModify},
		{"EvidenceAdd", testEvidenceAdd},
		{"ReviewVersionRace", testReviewVersionRace},
		{"ModifyHourlyLimit", testModifyHourlyLimit},
		{"RateCounters", testRateCounters},
		{"ImportedVersions", testImportedVersions},
		{"ImportTrust", testImportTrust},
		{"Feed", testFeed},
		{"FeedConcurrentWriters", testFeedConcurrentWriters},
		{"Secret", testSecret},
		{"Lease", testLease},
		{"RuleIDs", testRuleIDs},
		{"Usage", testUsage},
		{"QueryThreats", testQueryThreats},
		{"ListRevisions", testListRevisions},
		{"ImportOutcomes", testImportOutcomes},
		{"Copy", testCopy},
		{"Sessions", testSessions},
		{"UserTokens", testUserTokens},
		{"ListSubmissions", testListSubmissions},
		{"Webhooks", testWebhooks},
		{"Firewall", testFirewall},
		{"ImagePins", testImagePins},
		{"Analyses", testAnalyses},
		{"Ledger", testLedger},
		{"Exposures", testExposures},
		{"Sightings", testSightings},
		{"Disputes", testDisputes},
		{"Reputation", testReputation},
		{"Campaigns", testCampaigns},
		{"Browse", testBrowse},
		{"AccountChanges", testAccountChanges},
		{"DerivedIndicators", testDerivedIndicators},
		{"SummaryOf", testSummaryOf},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, backend) })
	}
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// dbName derives a database name unique to the running test.
func dbName(t *testing.T) string {
	n := unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(n) > 40 {
		n = n[len(n)-40:]
	}
	return "t_" + strings.Trim(n, "_") + "_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
}

func open(t *testing.T, b Backend, db string) port.Store {
	t.Helper()
	s, err := b(t, db, nil)
	if err != nil {
		t.Fatalf("opening %s: %v", db, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func newUser(email string) core.User {
	return core.User{ID: uuid.Must(uuid.NewV7()).String(), Email: email, Name: strings.Split(email, "@")[0], Tier: core.TierFree, Role: core.RoleSubmitter}
}

func newToken(userID string) (core.Token, string) {
	secret, _ := core.NewTokenSecret()
	return core.Token{ID: uuid.Must(uuid.NewV7()).String(), UserID: userID, Name: "ci", Hash: core.HashToken(secret), Hint: core.TokenHint(secret)}, secret
}

func testMigrations(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	// The backend migrated on open; a second run applies nothing and fails nothing.
	applied, err := s.Migrate(ctx(t))
	if err != nil {
		t.Fatalf("re-running migrations: %v", err)
	}
	if len(applied) != 0 {
		t.Fatalf("re-run applied %v again", applied)
	}
	st, err := s.Stats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if st != (core.Stats{}) {
		t.Fatalf("new database not empty: %+v", st)
	}
	if err := s.Health(ctx(t)); err != nil {
		t.Fatalf("health: %v", err)
	}
}

func testUsers(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	before := time.Now().Add(-time.Second)
	in := newUser("alice@example.com")
	in.Tier, in.Role, in.Name = core.TierPaid, core.RoleReviewer, "Alice Ré"
	got, err := s.CreateUser(c, in)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != in.ID || got.Email != in.Email || got.Name != "Alice Ré" || got.Tier != core.TierPaid || got.Role != core.RoleReviewer || got.SubmissionsPerHour != nil {
		t.Fatalf("created %+v from %+v", got, in)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now().Add(time.Second)) || got.CreatedAt.Location() != time.UTC {
		t.Fatalf("created_at %v not now in UTC", got.CreatedAt)
	}
	again, err := s.UserByEmail(c, "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != got.ID || again.Name != got.Name || !again.CreatedAt.Equal(got.CreatedAt) {
		t.Fatalf("read back %+v, stored %+v", again, got)
	}
	_, err = s.CreateUser(c, newUser("alice@example.com"))
	var ce *core.ConflictError
	if !errors.As(err, &ce) || ce.What != "user" || !errors.Is(err, core.ErrConflict) {
		t.Fatalf("duplicate e-mail: got %v, want a user conflict", err)
	}
	if _, err := s.UserByEmail(c, "nobody@example.com"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("unknown e-mail: got %v, want not found", err)
	}
	if st, _ := s.Stats(c); st.Users != 1 {
		t.Fatalf("users = %d after one create and one refused duplicate", st.Users)
	}
}

func testUserLimit(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	if _, err := s.CreateUser(c, newUser("bob@example.com")); err != nil {
		t.Fatal(err)
	}
	n := 250
	u, err := s.SetUserLimit(c, core.UserLimit{Email: "bob@example.com", PerHour: &n})
	if err != nil || u.SubmissionsPerHour == nil || *u.SubmissionsPerHour != 250 {
		t.Fatalf("set limit: %+v %v", u, err)
	}
	if u, _ := s.UserByEmail(c, "bob@example.com"); u.SubmissionsPerHour == nil || *u.SubmissionsPerHour != 250 {
		t.Fatalf("limit not stored: %+v", u)
	}
	zero := 0
	if u, err := s.SetUserLimit(c, core.UserLimit{Email: "bob@example.com", PerHour: &zero}); err != nil || *u.SubmissionsPerHour != 0 {
		t.Fatalf("limit 0: %+v %v", u, err)
	}
	if u, err := s.SetUserLimit(c, core.UserLimit{Email: "bob@example.com", PerHour: nil}); err != nil || u.SubmissionsPerHour != nil {
		t.Fatalf("clear limit: %+v %v", u, err)
	}
	if _, err := s.SetUserLimit(c, core.UserLimit{Email: "nobody@example.com", PerHour: &n}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("unknown user: got %v, want not found", err)
	}
}

// testUserAccess: set-tier and set-role change what they name and keep the
// rest; the change is in the change feed (the daemons' user caches follow
// it); users list in e-mail order, a page at a time.
func testUserAccess(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	for _, e := range []string{"dora@example.com", "bob@example.com", "carl@example.com"} {
		if _, err := s.CreateUser(c, newUser(e)); err != nil {
			t.Fatal(err)
		}
	}
	n := 5
	if _, err := s.SetUserLimit(c, core.UserLimit{Email: "bob@example.com", PerHour: &n}); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Stats(c)
	paid := core.TierPaid
	u, err := s.SetUserAccess(c, core.UserAccess{Email: "bob@example.com", Tier: &paid, Role: nil})
	if err != nil || u.Tier != core.TierPaid || u.Role != core.RoleSubmitter || u.SubmissionsPerHour == nil || *u.SubmissionsPerHour != 5 {
		t.Fatalf("set tier: %+v %v", u, err)
	}
	admin := core.RoleAdmin
	if u, err = s.SetUserAccess(c, core.UserAccess{Email: "bob@example.com", Tier: nil, Role: &admin}); err != nil || u.Tier != core.TierPaid || u.Role != core.RoleAdmin {
		t.Fatalf("set role: %+v %v", u, err)
	}
	if got, _ := s.UserByEmail(c, "bob@example.com"); got.Tier != core.TierPaid || got.Role != core.RoleAdmin {
		t.Fatalf("stored: %+v", got)
	}
	if after, _ := s.Stats(c); after.LastSeq != before.LastSeq+2 {
		t.Fatalf("change feed: seq %d → %d after two changes", before.LastSeq, after.LastSeq)
	}
	if _, err := s.SetUserAccess(c, core.UserAccess{Email: "nobody@example.com", Tier: &paid, Role: nil}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("unknown user: got %v, want not found", err)
	}
	all, err := s.ListUsers(c, core.UserQuery{After: "", Limit: core.MaxListUsers})
	if err != nil || len(all) != 3 || all[0].Email != "bob@example.com" || all[1].Email != "carl@example.com" || all[2].Email != "dora@example.com" || all[0].Tier != core.TierPaid {
		t.Fatalf("list: %+v %v", all, err)
	}
	page, err := s.ListUsers(c, core.UserQuery{After: "bob@example.com", Limit: 1})
	if err != nil || len(page) != 1 || page[0].Email != "carl@example.com" {
		t.Fatalf("page after bob, limit 1: %+v %v", page, err)
	}
	if rest, err := s.ListUsers(c, core.UserQuery{After: "dora@example.com", Limit: 10}); err != nil || len(rest) != 0 {
		t.Fatalf("after the last: %+v %v", rest, err)
	}
}

func testTokens(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u, err := s.CreateUser(c, newUser("carol@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	orphan, _ := newToken(uuid.NewString())
	if _, err := s.CreateToken(c, orphan); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("token for unknown user: got %v, want not found", err)
	}
	tok, secret := newToken(u.ID)
	stored, err := s.CreateToken(c, tok)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Hash != core.HashToken(secret) || stored.Revoked() || stored.CreatedAt.IsZero() || stored.Hint != tok.Hint {
		t.Fatalf("stored token %+v", stored)
	}
	dup := tok
	dup.ID = uuid.NewString()
	if _, err := s.CreateToken(c, dup); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("same hash twice: got %v, want conflict", err)
	}
	owner, err := s.Authenticate(c, tok.Hash)
	gotTok, gotUser := owner.Token, owner.User
	if err != nil || gotTok.ID != tok.ID || gotUser.ID != u.ID || gotUser.Email != u.Email {
		t.Fatalf("authenticate: %+v %+v %v", gotTok, gotUser, err)
	}
	if _, err := s.Authenticate(c, core.HashToken("thd_unknown")); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("unknown hash: got %v, want not found", err)
	}
	revoked, err := s.RevokeToken(c, tok.Hash)
	if err != nil || !revoked.Revoked() {
		t.Fatalf("revoke: %+v %v", revoked, err)
	}
	if _, err := s.Authenticate(c, tok.Hash); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("revoked token authenticates: %v", err)
	}
	again, err := s.RevokeToken(c, tok.Hash)
	if err != nil || again.RevokedAt == nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Fatalf("second revoke: %+v %v (want first revocation time kept)", again, err)
	}
	if _, err := s.RevokeToken(c, core.HashToken("thd_unknown")); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("revoke unknown: got %v, want not found", err)
	}
}
