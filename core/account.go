package core

import (
	"context"
	"errors"
	"strings"
)

// DeletedName is the public name a deleted account keeps: its verified
// reports stay published, under it.
const DeletedName = "deleted user"

// ErrAccountDisabled is a log-in with the right password to an account an
// administrator disabled.
var ErrAccountDisabled = errors.New("this account is disabled: ask an administrator of this threatd")

// ErrWrongPassword is a refused confirmation: the current password given
// to change the password or delete the account is not the user's.
var ErrWrongPassword = Invalid("current_password", "is not your current password")

// Rename changes the user's public name (the same rules as at sign-up:
// trimmed, at most 100 characters, no control characters; required).
func (a *Accounts) Rename(ctx context.Context, u User, name string) (User, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return User{}, Invalid("name", "is required")
	}
	if err := ValidateText("name", name, MaxUserName); err != nil {
		return User{}, err
	}
	c, err := a.store.ChangeAccount(ctx, AccountChange{UserID: u.ID, Name: &name, At: a.now().UTC()})
	return c.User, err
}

// ChangePassword replaces the user's password after checking the current
// one, and ends every other session of the user (the one whose secret is
// keep stays logged in). The caller bounds attempts: a wrong current
// password is ErrWrongPassword.
func (a *Accounts) ChangePassword(ctx context.Context, u User, current, next, keep string) (AccountChanged, error) {
	if !CheckPassword(u.PasswordHash, current) {
		return AccountChanged{}, ErrWrongPassword
	}
	if current == next {
		return AccountChanged{}, Invalid("password", "is your current password: choose a new one")
	}
	hash, err := newPasswordHash(next)
	if err != nil {
		return AccountChanged{}, err
	}
	return a.store.ChangeAccount(ctx, AccountChange{UserID: u.ID, PasswordHash: &hash, KeepSession: HashSessionSecret(keep), At: a.now().UTC()})
}

// EndOtherSessions logs the user out everywhere but in the session whose
// secret is keep, and says how many sessions it ended.
func (a *Accounts) EndOtherSessions(ctx context.Context, u User, keep string) (int, error) {
	c, err := a.store.ChangeAccount(ctx, AccountChange{UserID: u.ID, EndSessions: true, KeepSession: HashSessionSecret(keep), At: a.now().UTC()})
	return c.SessionsEnded, err
}

// Sessions lists the user's unexpired web sessions, newest first.
func (a *Accounts) Sessions(ctx context.Context, u User) ([]Session, error) {
	return a.store.ListSessions(ctx, u.ID)
}

// DeleteAccount deletes the user's own account after checking the
// password: pending reports and revisions are withdrawn, tokens revoked,
// sessions ended, the e-mail, name, password and the reports' contact
// e-mail removed; verified reports stay published under DeletedName.
func (a *Accounts) DeleteAccount(ctx context.Context, u User, password string) (AccountChanged, error) {
	if !CheckPassword(u.PasswordHash, password) {
		return AccountChanged{}, ErrWrongPassword
	}
	return a.store.ChangeAccount(ctx, AccountChange{UserID: u.ID, At: a.now().UTC(), Delete: &AccountDeletion{
		Email: "deleted-" + u.ID + "@deleted.invalid", Name: DeletedName,
		Note: "Withdrawn: the submitter deleted their account.", ActorName: DeletedName,
	}})
}

// SetDisabled disables (revoking every token and ending every session at
// once) or enables the account with that e-mail. Enabling restores the
// log-in, not the revoked tokens.
func (a *Accounts) SetDisabled(ctx context.Context, email string, disabled bool) (AccountChanged, error) {
	email, err := validEmail(email)
	if err != nil {
		return AccountChanged{}, err
	}
	u, err := a.store.UserByEmail(ctx, email)
	if err != nil {
		return AccountChanged{}, err
	}
	return a.store.ChangeAccount(ctx, AccountChange{UserID: u.ID, Disabled: &disabled, At: a.now().UTC()})
}
