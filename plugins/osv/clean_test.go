package osv

import "testing"

// clean and truncate: the fast paths return the text as is only when the
// slow ones would.
func TestCleanAndTruncate(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\nlines":  "plain\ttext\nlines",
		"bell\a and nul\x00":  "bell and nul",
		"bad \xff utf-8":      "bad \uFFFD utf-8",
		"ünïcödé ✓ \u0085end": "ünïcödé ✓ end",
		"":                    "",
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{{"abc", 3, "abc"}, {"abcd", 3, "abc"}, {"ééé", 3, "ééé"}, {"éééé", 3, "ééé"}, {"✓✓", 1, "✓"}} {
		if got := truncate(c.in, c.n); got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
