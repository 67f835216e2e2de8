package core

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
)

// SourceUserDomain is the e-mail domain of source users, the users a
// source's imported reports are attributed to (docs/ingestion.md): a
// reserved name (.invalid, RFC 2606) that no person's account may take.
const SourceUserDomain = "sources.threatd.invalid"

// SourceUserEmail is the e-mail of the source user of source.
func SourceUserEmail(source string) string { return source + "@" + SourceUserDomain }

// IsSourceUserEmail says whether e-mail names a source user.
func IsSourceUserEmail(email string) bool {
	return strings.HasSuffix(normaliseEmail(email), "@"+SourceUserDomain)
}

// SourceUsers is what SourceUser needs of a store.
type SourceUsers interface {
	UserByEmail(ctx context.Context, email string) (User, error)
	CreateUser(ctx context.Context, u User) (User, error)
}

// SourceUser returns the user source's reports are attributed to, public
// name source, creating it on first use: tier free, role submitter, no
// password and no token (it cannot log in or call the API).
func SourceUser(ctx context.Context, store SourceUsers, source string) (User, error) {
	email := SourceUserEmail(source)
	u, err := store.UserByEmail(ctx, email)
	if err == nil || !errors.Is(err, ErrNotFound) {
		return u, err
	}
	u, err = store.CreateUser(ctx, User{ID: uuid.Must(uuid.NewV7()).String(), Email: email, Name: source,
		Tier: TierFree, Role: RoleSubmitter, CreatedAt: time.Now().UTC()})
	if errors.Is(err, ErrConflict) {
		// Another import created it first.
		return store.UserByEmail(ctx, email)
	}
	return u, err
}
