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

// The Public Suffix List's algorithm on its own test cases
// (tests/test_psl.txt of the list) and on the names the block lists and
// check-malicious meet.
func TestPublicSuffix(t *testing.T) {
	for host, want := range map[string]string{
		"com": "com", "example.com": "com", "b.example.com": "com",
		"uk.com": "uk.com", "example.uk.com": "uk.com",
		"c.kobe.jp": "c.kobe.jp", "b.c.kobe.jp": "c.kobe.jp", "city.kobe.jp": "kobe.jp", "www.city.kobe.jp": "kobe.jp",
		"ck": "ck", "test.ck": "test.ck", "b.test.ck": "test.ck", "www.ck": "ck", "www.www.ck": "ck",
		"us": "us", "test.ak.us": "ak.us", "k12.ak.us": "k12.ak.us", "test.k12.ak.us": "k12.ak.us",
		"co.uk": "co.uk", "bbc.co.uk": "co.uk", "in-addr.arpa": "in-addr.arpa", "4.3.2.1.in-addr.arpa": "in-addr.arpa",
		"github.io": "github.io", "evil.github.io": "github.io", "blogspot.com": "blogspot.com",
		"evil.invalid": "invalid", "c2.evil.example": "example", "xn--85x722f.xn--55qx5d.cn": "xn--55qx5d.cn",
	} {
		if got := PublicSuffix(host); got != want {
			t.Errorf("PublicSuffix(%q) = %q, want %q", host, got, want)
		}
	}
	for host, want := range map[string]bool{"co.uk": true, "CO.UK.": true, "bbc.co.uk": false, "in-addr.arpa": true, "github.io": true, "x.github.io": false, "": false, "com": true, "evil.com": false} {
		if got := IsPublicSuffix(host); got != want {
			t.Errorf("IsPublicSuffix(%q) = %v, want %v", host, got, want)
		}
	}
}
