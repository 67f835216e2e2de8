package core

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"hash/crc32"
	"math/big"
	"strings"
	"time"
)

// TokenPrefix is the fixed, service-specific prefix of every API token
// (spec §5.3), chosen so that secret scanners can recognise a leaked token.
const TokenPrefix = "thd_"

const (
	tokenRandomLen   = 32 // base62 characters of randomness: ~190 bits
	tokenChecksumLen = 6  // base62 encoding of a CRC-32 (fits in 6 chars)
	// TokenLen is the full length of a token, prefix included.
	TokenLen = len(TokenPrefix) + tokenRandomLen + tokenChecksumLen
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Token is an issued API token as stored: never the secret itself, only its hash.
type Token struct {
	ID        string
	UserID    string
	Name      string
	Hash      string // hex SHA-256 of the full token text
	Hint      string // the last four characters, so a user can tell tokens apart
	CreatedAt time.Time
	RevokedAt *time.Time
	// LastUsedAt is when the token last authenticated a request, to the
	// minute (nil = never); daemons record it in batches.
	LastUsedAt *time.Time
}

// Revoked reports whether the token has been revoked.
func (t Token) Revoked() bool { return t.RevokedAt != nil }

// NewTokenSecret returns a fresh random token: "thd_" + 32 base62 characters + a
// 6-character base62 CRC-32 checksum of the random part.
func NewTokenSecret() (string, error) {
	var b strings.Builder
	b.Grow(TokenLen)
	b.WriteString(TokenPrefix)
	max := big.NewInt(int64(len(base62)))
	random := make([]byte, 0, tokenRandomLen)
	for range tokenRandomLen {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		random = append(random, base62[n.Int64()])
	}
	b.Write(random)
	b.WriteString(tokenChecksum(random))
	return b.String(), nil
}

// tokenChecksum encodes CRC-32 (IEEE) of random in exactly 6 base62 characters.
func tokenChecksum(random []byte) string {
	sum := uint64(crc32.ChecksumIEEE(random))
	out := make([]byte, tokenChecksumLen)
	for i := tokenChecksumLen - 1; i >= 0; i-- {
		out[i] = base62[sum%62]
		sum /= 62
	}
	return string(out)
}

// WellFormedToken reports whether s has the token shape and a correct checksum.
// It lets the daemon refuse garbage without touching storage.
func WellFormedToken(s string) bool {
	if len(s) != TokenLen || !strings.HasPrefix(s, TokenPrefix) {
		return false
	}
	body := s[len(TokenPrefix):]
	for i := 0; i < len(body); i++ {
		if !isBase62[body[i]] {
			return false
		}
	}
	want := tokenChecksum([]byte(body[:tokenRandomLen]))
	return subtle.ConstantTimeCompare([]byte(want), []byte(body[tokenRandomLen:])) == 1
}

// isBase62 tells the bytes of base62.
var isBase62 = func() (t [256]bool) {
	for i := 0; i < len(base62); i++ {
		t[base62[i]] = true
	}
	return t
}()

// HashToken returns the hex SHA-256 of a token, the only form in which it is stored.
// Tokens carry ~190 random bits, so a fast hash is sufficient (no password stretching).
func HashToken(secret string) string {
	var b [TokenHashLen]byte
	return string(AppendTokenHash(b[:0], secret))
}

// TokenHashLen is the length of HashToken's hex digest.
const TokenHashLen = 2 * sha256.Size

// AppendTokenHash appends HashToken(secret) to b: into an array on the
// caller's stack, a look-up by the hash allocates nothing.
func AppendTokenHash(b []byte, secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return hex.AppendEncode(b, sum[:])
}

// TokenHashEqual compares two hex token hashes in constant time.
func TokenHashEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// TokenHashEqualBytes is TokenHashEqual with b as bytes: constant time
// in their length, and false when the lengths differ.
func TokenHashEqualBytes(a string, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	var v byte
	for i := range len(b) {
		v |= a[i] ^ b[i]
	}
	return subtle.ConstantTimeByteEq(v, 0) == 1
}

// TokenHint returns the last four characters of a token for display.
func TokenHint(secret string) string {
	if len(secret) < 4 {
		return ""
	}
	return secret[len(secret)-4:]
}
