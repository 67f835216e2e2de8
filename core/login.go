package core

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// ErrBadCredentials is a refused web log-in: unknown e-mail, no password
// set, or a wrong password (one answer for all three).
var ErrBadCredentials = errors.New("the e-mail or password is not right")

// SignUp creates a user with a web password (tier free, role submitter).
func (a *Accounts) SignUp(ctx context.Context, email, name, password string) (User, error) {
	n, err := NewUser{Email: email, Name: name}.Normalise()
	if err != nil {
		return User{}, err
	}
	hash, err := newPasswordHash(password)
	if err != nil {
		return User{}, err
	}
	return a.create(ctx, n, hash)
}

// SetPassword gives an existing user a web password (ending their sessions).
func (a *Accounts) SetPassword(ctx context.Context, email, password string) (User, error) {
	email, err := personEmail(email)
	if err != nil {
		return User{}, err
	}
	hash, err := newPasswordHash(password)
	if err != nil {
		return User{}, err
	}
	return a.store.SetPassword(ctx, PasswordReset{Email: email, Hash: hash})
}

// newPasswordHash validates a new password and hashes it.
func newPasswordHash(password string) (string, error) {
	if err := ValidatePassword("password", password); err != nil {
		return "", err
	}
	return HashPassword(password)
}

// LogIn checks a password and opens a session of ttl; it returns the
// session secret for the cookie. Every refusal is ErrBadCredentials and
// costs one password hash, whether or not the user exists.
func (a *Accounts) LogIn(ctx context.Context, email, password string, ttl time.Duration) (string, User, error) {
	email = normaliseEmail(email)
	u, err := a.store.UserByEmail(ctx, email)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", User{}, err
	}
	if !CheckPassword(u.PasswordHash, password) {
		return "", User{}, ErrBadCredentials
	}
	if !u.Active() {
		return "", User{}, ErrAccountDisabled
	}
	secret, err := a.OpenSession(ctx, u, ttl)
	return secret, u, err
}

// OpenSession opens a session of ttl for a user already authenticated (by
// LogIn, or just created by SignUp) and returns its secret.
func (a *Accounts) OpenSession(ctx context.Context, u User, ttl time.Duration) (string, error) {
	secret, err := NewSessionSecret()
	if err != nil {
		return "", err
	}
	now := a.now().UTC()
	err = a.store.CreateSession(ctx, Session{Hash: HashSessionSecret(secret), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(ttl)})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// SessionUser resolves a session cookie's value to its user; ErrNotFound
// when the session is unknown or expired.
func (a *Accounts) SessionUser(ctx context.Context, secret string) (Session, User, error) {
	if secret == "" || len(secret) > 100 {
		return Session{}, User{}, NotFound("session", "")
	}
	o, err := a.store.SessionUser(ctx, HashSessionSecret(secret))
	s, u := o.Session, o.User
	if err == nil && !u.Active() {
		// Disabling ends the sessions; this holds between the two.
		return Session{}, User{}, NotFound("session", "")
	}
	return s, u, err
}

// LogOut ends the session with this secret.
func (a *Accounts) LogOut(ctx context.Context, secret string) error {
	if secret == "" || len(secret) > 100 {
		return nil
	}
	return a.store.DeleteSession(ctx, HashSessionSecret(secret))
}

// IssueUserToken creates an API token for a user already resolved (the web
// site's Generate Token); same format and hashing as IssueToken.
func (a *Accounts) IssueUserToken(ctx context.Context, u User, name string) (string, Token, error) {
	if name == "" {
		return "", Token{}, Invalid("name", "is required")
	}
	if err := ValidateText("name", name, 100); err != nil {
		return "", Token{}, err
	}
	return a.issue(ctx, u, name)
}

// Tokens lists a user's tokens.
func (a *Accounts) Tokens(ctx context.Context, u User) ([]Token, error) {
	return a.store.ListTokens(ctx, u.ID)
}

// RevokeUserToken revokes one of the user's own tokens.
func (a *Accounts) RevokeUserToken(ctx context.Context, u User, tokenID string) (Token, error) {
	if _, err := uuid.Parse(tokenID); err != nil {
		return Token{}, NotFound("token", tokenID)
	}
	return a.store.RevokeUserToken(ctx, UserToken{UserID: u.ID, TokenID: tokenID})
}
