// Package core is the threatd domain: what a threat report, a user and an API
// token are, the rules they obey, and the use cases that act on them. It
// imports nothing of HTTP, SQL or gRPC; storage and exporters are reached only
// through the interfaces defined here.
package core

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel domain errors. Adapters (HTTP, gRPC) map them to their own codes.
var (
	// ErrNotFound means the thing asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict means the change collides with existing state (a duplicate, a unique key).
	ErrConflict = errors.New("conflict")
	// ErrLimit means a limit (rate, cap, quota) refused the operation.
	ErrLimit = errors.New("limit exceeded")
	// ErrUnauthenticated means no valid credentials were presented.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden means the caller is known but not allowed to do this.
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid means the input is malformed; FieldError carries which field.
	ErrInvalid = errors.New("invalid input")
	// ErrUnavailable means a backend (storage or exporter plugin) cannot be reached.
	ErrUnavailable = errors.New("unavailable")
	// ErrCorrupt means the storage found its database damaged.
	ErrCorrupt = errors.New("database corrupt")
)

// FieldError reports one invalid input field; it matches ErrInvalid with errors.Is.
type FieldError struct {
	Field   string
	Message string
}

// Error returns "field: message".
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Is makes errors.Is(err, ErrInvalid) true for every FieldError.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// Invalid returns a FieldError for field with a formatted message.
//
// Whatever a caller passes, an error never echoes a long value back: the
// field name and every string argument are cut to MaxQuoted characters
// (a 100 KB bad value would otherwise come back whole in the 400).
func Invalid(field, format string, args ...any) error {
	short := make([]any, len(args)) // never write to the caller's slice
	for i, a := range args {
		if s, ok := a.(string); ok {
			a = Shorten(s)
		}
		short[i] = a
	}
	return &FieldError{Field: Shorten(field), Message: fmt.Sprintf(format, short...)}
}

// MaxQuoted bounds how much of a caller's value an error message repeats.
const MaxQuoted = 100

// Shorten returns s cut to its first MaxQuoted characters, marked with "…"
// and the full length when cut.
func Shorten(s string) string {
	if len(s) <= MaxQuoted {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxQuoted {
			return fmt.Sprintf("%s… (%d bytes)", s[:i], len(s))
		}
		n++
	}
	return s
}

// VersionError refuses a review decision made on a version of a report that
// is no longer current (docs/cli.md, content versions): nothing changed.
type VersionError struct {
	ThreatID       string
	Asked, Current int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("report %s is at version %d, not %d: it changed after you read it; read it again (threatd review show %s) and decide on version %d",
		e.ThreatID, e.Current, e.Asked, e.ThreatID, e.Current)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *VersionError) Is(target error) bool { return target == ErrConflict }

// ConflictError is a conflict with the identity of what it collided with.
type ConflictError struct {
	// What names the kind of thing that already exists ("user", "token", "threat").
	What string
	// Key is the colliding key (an e-mail address, a canonical report key).
	Key string
	// Meta carries extra details a caller may show (e.g. the existing threat id).
	Meta map[string]string
	// Message, when set, replaces the default "<what> already exists: <key>".
	Message string
}

// Error describes the collision.
func (e *ConflictError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("%s already exists: %s", e.What, e.Key)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// NotFoundError names what was not found; it matches ErrNotFound.
type NotFoundError struct {
	What string
	Key  string
}

// Error describes what is missing.
func (e *NotFoundError) Error() string {
	if e.Key == "" {
		return e.What + " not found"
	}
	return fmt.Sprintf("%s not found: %s", e.What, e.Key)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// NotFound returns a NotFoundError.
func NotFound(what, key string) error { return &NotFoundError{What: what, Key: key} }

// normaliseEmail lower-cases and trims an e-mail address.
func normaliseEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
