package core

import (
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"
)

// Tier is a subscription tier; it decides which endpoints a token may call.
type Tier string

// The tiers of spec §4.2.
const (
	TierFree Tier = "free"
	TierPaid Tier = "paid"
)

// ParseTier validates a tier name.
func ParseTier(s string) (Tier, error) {
	switch t := Tier(strings.ToLower(strings.TrimSpace(s))); t {
	case TierFree, TierPaid:
		return t, nil
	}
	return "", Invalid("tier", "must be one of free, paid (got %q)", s)
}

// Role is what a user may do beyond submitting.
type Role string

// The roles of docs/api/README.md ("Authentication") and docs/cli.md.
const (
	RoleSubmitter Role = "submitter"
	RoleReviewer  Role = "reviewer"
	RoleAdmin     Role = "admin"
)

// ParseRole validates a role name.
func ParseRole(s string) (Role, error) {
	switch r := Role(strings.ToLower(strings.TrimSpace(s))); r {
	case RoleSubmitter, RoleReviewer, RoleAdmin:
		return r, nil
	}
	return "", Invalid("role", "must be one of submitter, reviewer, admin (got %q)", s)
}

// CanReview reports whether the role may verify and reject reports.
func (r Role) CanReview() bool { return r == RoleReviewer || r == RoleAdmin }

// User is an account that owns API tokens and submits reports.
type User struct {
	ID    string
	Email string // normalised: trimmed, lower-case
	Name  string // public name, shown as verified_by and publisher of reviews
	Tier  Tier
	Role  Role
	// SubmissionsPerHour is an administrator's per-user override of the hourly
	// submission limit; nil means the tier default applies.
	SubmissionsPerHour *int
	CreatedAt          time.Time
	// PasswordHash is the web log-in password as an argon2id PHC string
	// (HashPassword); empty = the user cannot log in to the web site.
	PasswordHash string
	// DisabledAt is when an administrator disabled the account (nil =
	// active): a disabled user can neither log in nor use the API.
	DisabledAt *time.Time
	// DeletedAt is when the user deleted the account: it is then disabled
	// for good, its e-mail and name replaced (DeleteAccount).
	DeletedAt *time.Time
}

// Active reports whether the user may log in and call the API.
func (u User) Active() bool { return u.DisabledAt == nil && u.DeletedAt == nil }

// State names the account's state: "active", "disabled" or "deleted".
func (u User) State() string {
	switch {
	case u.DeletedAt != nil:
		return "deleted"
	case u.DisabledAt != nil:
		return "disabled"
	}
	return "active"
}

// MaxUserName bounds a user's public name (characters).
const MaxUserName = 100

// NewUser is the input of creating a user.
type NewUser struct {
	Email string
	Name  string
	Tier  Tier
	Role  Role
}

// Normalise validates a NewUser and fills defaults: tier free, role
// submitter. A name left empty stays empty here: the user is created as
// DefaultName of its id, never with any part of the e-mail.
func (n NewUser) Normalise() (NewUser, error) {
	n.Email = normaliseEmail(n.Email)
	if err := ValidateEmail("email", n.Email); err != nil {
		return n, err
	}
	if IsSourceUserEmail(n.Email) {
		return n, Invalid("email", "is reserved for the users sources' reports are attributed to (@%s)", SourceUserDomain)
	}
	if n.Tier == "" {
		n.Tier = TierFree
	} else if _, err := ParseTier(string(n.Tier)); err != nil {
		return n, err
	}
	if n.Role == "" {
		n.Role = RoleSubmitter
	} else if _, err := ParseRole(string(n.Role)); err != nil {
		return n, err
	}
	n.Name = strings.TrimSpace(n.Name)
	if err := ValidateText("name", n.Name, MaxUserName); err != nil {
		return n, err
	}
	return n, nil
}

// DefaultName is the public name of a user created without one: "user-"
// and the first 8 characters of its id. No part of an e-mail is ever
// shown publicly.
func DefaultName(id string) string {
	return "user-" + id[:min(8, len(id))]
}

// Count says n things in English: "1 token", "2 tokens".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// NormaliseEmail is an e-mail address as users are looked up by: trimmed
// and lower-cased.
func NormaliseEmail(s string) string { return normaliseEmail(s) }

// ValidateEmail checks that s is a single bare e-mail address (no display name).
func ValidateEmail(field, s string) error {
	if s == "" {
		return Invalid(field, "is required")
	}
	if len(s) > 254 {
		return Invalid(field, "is longer than 254 characters")
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || addr.Name != "" {
		return Invalid(field, "is not a valid e-mail address")
	}
	return nil
}

// ValidateText checks that s is valid UTF-8 without control characters and at
// most maxRunes long.
func ValidateText(field, s string, maxRunes int) error {
	if !utf8.ValidString(s) {
		return Invalid(field, "is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > maxRunes {
		return Invalid(field, "is longer than %d characters", maxRunes)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return Invalid(field, "contains a control character")
		}
	}
	return nil
}
