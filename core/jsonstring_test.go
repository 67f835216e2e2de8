package core

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendJSONStringIsEncodingJSON compares AppendJSONString with
// json.Marshal on every pair of bytes below 0x80 and beyond, and on random
// strings drawn mostly from the characters it escapes itself.
func TestAppendJSONStringIsEncodingJSON(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, _ := json.Marshal(s)
		if got := AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q: got %s, want %s", s, got[1:], want)
		}
	}
	check("")
	for a := range 0x81 {
		check(string([]byte{byte(a)}))
		for b := range 0x81 {
			check(string([]byte{byte(a), byte(b)}))
		}
	}
	for _, s := range []string{`package "a" is not in the threat database`, `<script>&amp;</script>`, `\\server\share`, "é", "\u2028", "\xff", "a\x00b"} {
		check(s)
	}
	alphabet := []byte("ab\"\\<>&/ \x7e\x1f")
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		check(string(b))
	}
}

// AppendJSONStrings writes what json.Marshal writes of a non-nil []string.
func TestAppendJSONStringsIsEncodingJSON(t *testing.T) {
	for _, list := range [][]string{{}, {""}, {"a"}, {"<a>", "b\"c", "\u2028", "\xff", "x\ny"}} {
		want, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendJSONStrings([]byte("x"), list); string(got) != "x"+string(want) {
			t.Errorf("%q: %s, want %s", list, got[1:], want)
		}
	}
	if got := AppendJSONStrings(nil, nil); string(got) != "[]" {
		t.Errorf("nil: %s, want []", got)
	}
}
