package core

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// The argon2id cost of web passwords: OWASP's recommended minimum
// configuration (19 MiB of memory, 2 passes, 1 lane), about 25 ms of one
// core on the development machines. The parameters are stored in each hash,
// so raising them later keeps old passwords working.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
)

// Password length bounds: long enough to resist guessing, short enough that
// hashing cannot be used to burn CPU (argon2 reads the whole input).
const (
	PasswordMin = 10
	PasswordMax = 256
)

// ValidatePassword checks a new password's length.
func ValidatePassword(field, pw string) error {
	n := utf8.RuneCountInString(pw)
	switch {
	case !utf8.ValidString(pw):
		return Invalid(field, "is not valid UTF-8")
	case n < PasswordMin:
		return Invalid(field, "must be at least %d characters", PasswordMin)
	case n > PasswordMax:
		return Invalid(field, "must be at most %d characters", PasswordMax)
	}
	return nil
}

// HashPassword returns pw hashed with argon2id and a random salt, as a PHC
// string: $argon2id$v=19$m=19456,t=2,p=1$<salt>$<key>.
func HashPassword(pw string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

// dummyHash is verified against when the user does not exist or has no
// password, so that a log-in costs the same either way.
var dummyHash = func() string {
	h, err := HashPassword("threatd-no-such-user")
	if err != nil {
		panic(err)
	}
	return h
}()

// CheckPassword reports whether pw matches the PHC string hash, in constant
// time. An empty or malformed hash matches nothing (after the same work).
func CheckPassword(hash, pw string) bool {
	ok := hash != ""
	if !ok {
		hash = dummyHash
	}
	var v, m, t, p int
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil ||
		m < 8 || m > 1<<20 || t < 1 || t > 16 || p < 1 || p > 16 {
		return false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 64 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, uint32(t), uint32(m), uint8(p), uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1 && ok
}
