package core

import (
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q is not an argon2id PHC string with the documented cost", h)
	}
	h2, _ := HashPassword("correct horse battery")
	if h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	if !CheckPassword(h, "correct horse battery") || !CheckPassword(h2, "correct horse battery") {
		t.Fatal("the right password is refused")
	}
	for _, c := range []struct{ hash, pw string }{
		{h, "correct horse batterY"},
		{h, ""},
		{"", ""},
		{"", "threatd-no-such-user"}, // the dummy hash's password never matches an empty hash
		{"$argon2id$v=19$m=19456,t=2,p=1$AAAA", "x"},
		{strings.Replace(h, "m=19456", "m=99999999", 1), "correct horse battery"},
		{strings.Replace(h, "$argon2id$", "$argon2i$", 1), "correct horse battery"},
	} {
		if CheckPassword(c.hash, c.pw) {
			t.Errorf("CheckPassword(%q, %q) = true", c.hash, c.pw)
		}
	}
}

func TestValidatePassword(t *testing.T) {
	for pw, want := range map[string]string{
		"short":                    "password: must be at least 10 characters",
		strings.Repeat("x", 257):   "password: must be at most 256 characters",
		"\xff\xfe long enough pwd": "password: is not valid UTF-8",
		"ten chars!":               "",
	} {
		err := ValidatePassword("password", pw)
		if (err == nil) != (want == "") || (err != nil && err.Error() != want) {
			t.Errorf("ValidatePassword(%q) = %v, want %q", pw, err, want)
		}
	}
}
