package core

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"time"
)

// Session is a web log-in as stored: the hash of the cookie's value only.
type Session struct {
	Hash      string // hex SHA-256 of the session secret
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// NewSessionSecret returns a fresh session secret: 32 random bytes,
// base64url-encoded for a cookie.
func NewSessionSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// HashSessionSecret returns the form in which a session secret is stored.
func HashSessionSecret(secret string) string {
	sum := sha256.Sum256([]byte("threatd-session:" + secret))
	return hex.EncodeToString(sum[:])
}
