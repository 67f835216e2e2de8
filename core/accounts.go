package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Accounts is the use-case layer for users and API tokens.
type Accounts struct {
	store AccountStore
	now   func() time.Time
}

// NewAccounts returns the account use cases over store.
func NewAccounts(store AccountStore) *Accounts {
	return &Accounts{store: store, now: time.Now}
}

// Principal is an authenticated caller: the token presented and its user.
type Principal struct {
	User  User
	Token Token
}

// AddUser validates and creates a user.
func (a *Accounts) AddUser(ctx context.Context, in NewUser) (User, error) {
	n, err := in.Normalise()
	if err != nil {
		return User{}, err
	}
	return a.create(ctx, n, "")
}

// create stores a normalised new user with a password hash ("" = none).
// Its id is random (UUIDv4), so that the public name of a user created
// without one (DefaultName: the id's first 8 characters) tells users
// created in the same minute apart, which a time-ordered id would not.
func (a *Accounts) create(ctx context.Context, n NewUser, passwordHash string) (User, error) {
	id, err := uuid.NewRandom()
	if err != nil {
		return User{}, err
	}
	if n.Name == "" {
		n.Name = DefaultName(id.String())
	}
	return a.store.CreateUser(ctx, User{
		ID: id.String(), Email: n.Email, Name: n.Name, Tier: n.Tier, Role: n.Role,
		CreatedAt: a.now().UTC(), PasswordHash: passwordHash,
	})
}

// SetSubmissionLimit sets a user's own hourly submission limit; 0 means no
// hourly limit for that user.
func (a *Accounts) SetSubmissionLimit(ctx context.Context, email string, perHour int) (User, error) {
	if perHour < 0 {
		return User{}, Invalid("submissions-per-hour", "must be a non-negative integer (0 = no hourly limit)")
	}
	email, err := validEmail(email)
	if err != nil {
		return User{}, err
	}
	return a.store.SetUserLimit(ctx, UserLimit{Email: email, PerHour: &perHour})
}

// SetTier changes a user's tier: the daemons apply it to the user's next
// request (within cache.freshness).
func (a *Accounts) SetTier(ctx context.Context, email, tier string) (User, error) {
	t, err := ParseTier(tier)
	if err != nil {
		return User{}, err
	}
	return a.setAccess(ctx, email, &t, nil)
}

// SetRole changes a user's role (submitter, reviewer, admin).
func (a *Accounts) SetRole(ctx context.Context, email, role string) (User, error) {
	r, err := ParseRole(role)
	if err != nil {
		return User{}, err
	}
	return a.setAccess(ctx, email, nil, &r)
}

// setAccess changes the tier or role (nil: unchanged) of the user with
// that e-mail.
func (a *Accounts) setAccess(ctx context.Context, email string, tier *Tier, role *Role) (User, error) {
	email, err := validEmail(email)
	if err != nil {
		return User{}, err
	}
	return a.store.SetUserAccess(ctx, UserAccess{Email: email, Tier: tier, Role: role})
}

// Users calls fn with every user in e-mail order, read a page at a time.
func (a *Accounts) Users(ctx context.Context, fn func(User) error) error {
	after := ""
	for {
		page, err := a.store.ListUsers(ctx, UserQuery{After: after, Limit: MaxListUsers})
		if err != nil {
			return err
		}
		for _, u := range page {
			if err := fn(u); err != nil {
				return err
			}
		}
		if len(page) < MaxListUsers {
			return nil
		}
		after = page[len(page)-1].Email
	}
}

// TokensOf returns the tokens of the user with that e-mail, newest first,
// revoked ones included.
func (a *Accounts) TokensOf(ctx context.Context, email string) (User, []Token, error) {
	email, err := validEmail(email)
	if err != nil {
		return User{}, nil, err
	}
	u, err := a.store.UserByEmail(ctx, email)
	if err != nil {
		return User{}, nil, err
	}
	toks, err := a.store.ListTokens(ctx, u.ID)
	return u, toks, err
}

// personEmail is validEmail refusing a source user's e-mail: a source's
// user has no password and no token, so that nobody acts as the source.
func personEmail(email string) (string, error) {
	email, err := validEmail(email)
	if err == nil && IsSourceUserEmail(email) {
		err = Invalid("email", "names a source's user (@%s), which has no password and no token", SourceUserDomain)
	}
	return email, err
}

// validEmail normalises and validates the e-mail that names a user.
func validEmail(email string) (string, error) {
	email = normaliseEmail(email)
	return email, ValidateEmail("email", email)
}

// IssueToken creates an API token for the user with that e-mail and returns
// the secret, which is shown once and never stored.
func (a *Accounts) IssueToken(ctx context.Context, email, name string) (string, Token, error) {
	email, err := personEmail(email)
	if err != nil {
		return "", Token{}, err
	}
	if err := ValidateText("name", name, 100); err != nil {
		return "", Token{}, err
	}
	u, err := a.store.UserByEmail(ctx, email)
	if err != nil {
		return "", Token{}, err
	}
	return a.issue(ctx, u, name)
}

// issue creates a token for a user already looked up.
func (a *Accounts) issue(ctx context.Context, u User, name string) (string, Token, error) {
	if !u.Active() {
		return "", Token{}, &ConflictError{What: "user", Key: u.Email, Message: "the account " + u.Email + " is " + u.State() + ": enable it first (threatd user enable)"}
	}
	secret, err := NewTokenSecret()
	if err != nil {
		return "", Token{}, fmt.Errorf("generate token: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", Token{}, err
	}
	t, err := a.store.CreateToken(ctx, Token{
		ID: id.String(), UserID: u.ID, Name: name, Hash: HashToken(secret),
		Hint: TokenHint(secret), CreatedAt: a.now().UTC(),
	})
	if err != nil {
		return "", Token{}, err
	}
	return secret, t, nil
}

// RevokeToken revokes the token whose secret is given.
func (a *Accounts) RevokeToken(ctx context.Context, secret string) (Token, error) {
	if !WellFormedToken(secret) {
		return Token{}, Invalid("token", "is not a threatd API token (expected %s followed by %d characters)", TokenPrefix, TokenLen-len(TokenPrefix))
	}
	return a.store.RevokeToken(ctx, HashToken(secret))
}

// Authenticate resolves a presented token to its principal. Malformed,
// unknown and revoked tokens all yield ErrUnauthenticated.
func (a *Accounts) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !WellFormedToken(secret) {
		return Principal{}, ErrUnauthenticated
	}
	hash := HashToken(secret)
	owner, err := a.store.Authenticate(ctx, hash)
	t, u := owner.Token, owner.User
	if errors.Is(err, ErrNotFound) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, err
	}
	// The store looked the hash up by index; compare it again in constant
	// time so that no code path accepts a token on anything but an exact match.
	if !TokenHashEqual(t.Hash, hash) || t.Revoked() || !u.Active() {
		return Principal{}, ErrUnauthenticated
	}
	return Principal{User: u, Token: t}, nil
}
