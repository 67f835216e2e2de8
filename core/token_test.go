package core

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestNewTokenSecretFormat(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		tok, err := NewTokenSecret()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tok, "thd_") || len(tok) != TokenLen {
			t.Fatalf("token %q: want thd_ prefix and length %d", tok, TokenLen)
		}
		for _, r := range tok[4:] {
			if !strings.ContainsRune(base62, r) {
				t.Fatalf("token %q has non-base62 character %q", tok, r)
			}
		}
		if !WellFormedToken(tok) {
			t.Fatalf("fresh token %q not well formed", tok)
		}
		if seen[tok] {
			t.Fatalf("duplicate token %q", tok)
		}
		seen[tok] = true
	}
}

func TestWellFormedTokenRejects(t *testing.T) {
	good, _ := NewTokenSecret()
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
	cases := map[string]string{
		"empty":            "",
		"prefix only":      "thd_",
		"wrong prefix":     "tkn_" + good[4:],
		"upper prefix":     "THD_" + good[4:],
		"short":            good[:len(good)-1],
		"long":             good + "a",
		"random flipped":   flip(good, 10),
		"checksum flipped": flip(good, len(good)-1),
		"non-base62":       good[:10] + "-" + good[11:],
		"space":            good[:10] + " " + good[11:],
	}
	for name, tok := range cases {
		if WellFormedToken(tok) {
			t.Errorf("%s: %q accepted", name, tok)
		}
	}
}

func TestHashToken(t *testing.T) {
	a, _ := NewTokenSecret()
	b, _ := NewTokenSecret()
	ha, hb := HashToken(a), HashToken(b)
	if len(ha) != 64 || strings.Contains(ha, a) {
		t.Fatalf("hash %q: want 64 hex characters not containing the secret", ha)
	}
	if ha != HashToken(a) {
		t.Fatal("hash not deterministic")
	}
	if TokenHashEqual(ha, hb) || !TokenHashEqual(ha, HashToken(a)) {
		t.Fatal("TokenHashEqual wrong")
	}
	// The stored form is the hex SHA-256 (tokens created before any
	// change of the code must still match).
	if sum := sha256.Sum256([]byte(a)); ha != hex.EncodeToString(sum[:]) || string(AppendTokenHash([]byte("x"), a)) != "x"+ha {
		t.Fatalf("hash %q is not the hex SHA-256 of the secret", ha)
	}
	if TokenHashEqualBytes(ha, []byte(hb)) || !TokenHashEqualBytes(ha, []byte(HashToken(a))) ||
		TokenHashEqualBytes(ha, []byte(ha[:63])) || TokenHashEqualBytes(ha[:63], []byte(ha)) || !TokenHashEqualBytes("", nil) {
		t.Fatal("TokenHashEqualBytes wrong")
	}
	for i := range ha {
		flipped := []byte(ha)
		flipped[i] ^= 1
		if TokenHashEqualBytes(ha, flipped) {
			t.Fatalf("a hash differing at byte %d is equal", i)
		}
	}
	if TokenHint(a) != a[len(a)-4:] {
		t.Fatal("hint is not the last four characters")
	}
}

// BenchmarkWellFormedToken is the shape check in front of every
// authenticated request.
func BenchmarkWellFormedToken(b *testing.B) {
	tok, err := NewTokenSecret()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !WellFormedToken(tok) {
			b.Fatal("refused")
		}
	}
}
