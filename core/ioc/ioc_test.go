package ioc

import "testing"

func TestRefang(t *testing.T) {
	cases := map[string]string{
		"hxxps://evil[.]example[.]com/a":  "https://evil.example.com/a",
		"hxxp://evil(.)example/x":         "http://evil.example/x",
		"HXXPS[:]//evil[dot]example/x":    "https://evil.example/x",
		"https[:]//a[.]b":                 "https://a.b",
		"203[.]0[.]113[.]7":               "203.0.113.7",
		"evil{.}example":                  "evil.example",
		"mail[@]evil[.]example":           "mail@evil.example",
		"plain text stays as it is. Yes.": "plain text stays as it is. Yes.",
	}
	for in, want := range cases {
		if got := Refang(in); got != want {
			t.Errorf("Refang(%q) = %q, want %q", in, got, want)
		}
	}
}
