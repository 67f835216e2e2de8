package core

import (
	"context"
	"time"
)

// AccountStore keeps users and their API tokens.
type AccountStore interface {
	// CreateUser stores a new user; ErrConflict when the e-mail is taken.
	CreateUser(ctx context.Context, u User) (User, error)
	// UserByEmail returns the user with that (normalised) e-mail.
	UserByEmail(ctx context.Context, email string) (User, error)
	// SetUserLimit sets (or with nil clears) a user's hourly submission limit.
	SetUserLimit(ctx context.Context, l UserLimit) (User, error)
	// SetUserAccess changes a user's tier and role (nil = unchanged);
	// ErrNotFound when no user has that e-mail.
	SetUserAccess(ctx context.Context, a UserAccess) (User, error)
	// ListUsers returns up to q.Limit users (1..MaxListUsers, else
	// ErrInvalid) in e-mail order, after the e-mail q.After ("" = from the
	// first).
	ListUsers(ctx context.Context, q UserQuery) ([]User, error)

	// CreateToken stores a token (its hash only) for an existing user.
	CreateToken(ctx context.Context, t Token) (Token, error)
	// RevokeToken marks the token with this hash revoked; ErrNotFound if unknown.
	RevokeToken(ctx context.Context, hash string) (Token, error)
	// Authenticate returns the live token with this hash and its user;
	// ErrNotFound when no such token exists or it is revoked.
	Authenticate(ctx context.Context, hash string) (TokenOwner, error)
	// ListTokens returns a user's tokens, revoked ones included, newest first.
	ListTokens(ctx context.Context, userID string) ([]Token, error)
	// RevokeUserToken revokes the user's token with this id; ErrNotFound
	// when the user has no such token.
	RevokeUserToken(ctx context.Context, t UserToken) (Token, error)
	// TokensUsed records when tokens (by id) were last used; a time older
	// than the stored one is ignored.
	TokensUsed(ctx context.Context, used map[string]time.Time) error

	// SetPassword stores a user's password hash and ends the user's web
	// sessions; ErrNotFound when no user has that e-mail.
	SetPassword(ctx context.Context, p PasswordReset) (User, error)
	// CreateSession stores a web session (and drops the user's expired ones).
	CreateSession(ctx context.Context, s Session) error
	// SessionUser returns the unexpired session with this hash and its
	// user; ErrNotFound otherwise.
	SessionUser(ctx context.Context, hash string) (SessionOwner, error)
	// DeleteSession ends a web session; ending an unknown one succeeds.
	DeleteSession(ctx context.Context, hash string) error
	// ListSessions returns the user's unexpired web sessions, newest first
	// (at most MaxListSessions).
	ListSessions(ctx context.Context, userID string) ([]Session, error)
	// ChangeAccount applies one change to the account with c.UserID in one
	// transaction (see AccountChange); ErrNotFound when there is no such
	// user or the account was deleted, ErrConflict when a deletion's
	// e-mail is taken.
	ChangeAccount(ctx context.Context, c AccountChange) (AccountChanged, error)
}

// MaxListSessions bounds the sessions ListSessions returns.
const MaxListSessions = 100

// AccountChange is a change to one account, applied by the store in one
// transaction. Nil and zero fields are left as they are; the effects run
// in this order: name, password, disable or enable, the sessions, delete.
type AccountChange struct {
	UserID string
	// Name is a new public name.
	Name *string
	// PasswordHash is a new password hash (HashPassword); setting it ends
	// every session of the user but KeepSession.
	PasswordHash *string
	// Disabled disables (true: every live token is revoked and every
	// session ended) or enables (false) the account. Enabling brings no
	// token or session back.
	Disabled *bool
	// EndSessions ends the user's sessions but KeepSession (the hash of
	// the session to keep, "" = none).
	EndSessions bool
	KeepSession string
	// Delete, when set, deletes the account: see AccountDeletion.
	Delete *AccountDeletion
	// At is when the change is made.
	At time.Time
}

// AccountDeletion is what deleting an account writes. The user's pending
// reports are withdrawn (rejected, with Note, by ActorName) and their
// pending revisions rejected; tokens are revoked and sessions ended; the
// user row stays (verified reports still name it as their submitter) with
// Email and Name in place of the person's, no password, DeletedAt set;
// the contact e-mail of the user's reports is removed.
type AccountDeletion struct {
	Email, Name     string
	Note, ActorName string
}

// AccountChanged is the account after a change and what the change did.
type AccountChanged struct {
	User               User
	TokensRevoked      int
	SessionsEnded      int
	ReportsWithdrawn   int
	RevisionsWithdrawn int
}

// UserLimit sets (PerHour) or with nil clears the hourly submission limit
// of the user with Email (AccountStore.SetUserLimit).
type UserLimit struct {
	Email   string
	PerHour *int
}

// UserAccess changes the tier and role of the user with Email; a nil field
// is left as it is (AccountStore.SetUserAccess).
type UserAccess struct {
	Email string
	Tier  *Tier
	Role  *Role
}

// UserQuery is one page of users in e-mail order (AccountStore.ListUsers).
type UserQuery struct {
	After string // the last e-mail of the previous page; "" = from the first
	Limit int
}

// UserToken names one token of one user (AccountStore.RevokeUserToken).
type UserToken struct {
	UserID, TokenID string
}

// PasswordReset replaces the password hash of the user with Email
// (AccountStore.SetPassword).
type PasswordReset struct {
	Email, Hash string
}

// TokenOwner is a live API token and the user it belongs to
// (AccountStore.Authenticate).
type TokenOwner struct {
	Token Token
	User  User
}

// SessionOwner is an unexpired web session and its user
// (AccountStore.SessionUser).
type SessionOwner struct {
	Session Session
	User    User
}
