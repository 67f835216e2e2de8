package proxy

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReplaceStream: every mark is replaced, also one that spans two
// reads, and nothing else changes.
func TestReplaceStream(t *testing.T) {
	for _, n := range []int{0, 1, 2, 1000, 256<<10 - len(baseMark)/2, 256 << 10, 3 * 256 << 10} {
		var src strings.Builder
		src.WriteString(strings.Repeat("a", n))
		src.WriteString(baseMark + "/x" + baseMark)
		src.WriteString(strings.Repeat("b", n))
		src.WriteString(baseMark)
		want := strings.ReplaceAll(src.String(), baseMark, "https://fw.example/base")
		for _, r := range []func(string) *strings.Reader{strings.NewReader} {
			var out bytes.Buffer
			if err := replaceStream(&out, iotest.HalfReader(r(src.String())), baseMark, "https://fw.example/base"); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Fatalf("n=%d: %d bytes, want %d", n, out.Len(), len(want))
			}
		}
	}
}

// TestEscapeForSkipsOnlyWhatNeedsNone: the fast path (a base written as
// it is) gives what the full escaping gives, for bases that need escaping
// and bases that do not.
func TestEscapeForSkipsOnlyWhatNeedsNone(t *testing.T) {
	for _, ct := range []string{"application/json", "application/vnd.npm.install-v1+json", "text/html; charset=utf-8", "text/plain"} {
		for _, base := range []string{"https://fw.example/functions/v1/firewall/npm", "https://fw.example:8443/a-b_c~d/%2F",
			`https://x/"q"`, `https://x/a\b`, "https://x/<t>&'", "https://x/\u2028", "https://x/\x01", "https://ëxample/", ""} {
			if got, want := escapeFor(ct)(base), escapeSlow(ct)(base); got != want {
				t.Errorf("%s %q: %q, want %q", ct, base, got, want)
			}
		}
	}
}

// TestMarksIn finds every mark, adjacent ones included.
func TestMarksIn(t *testing.T) {
	body := []byte(baseMark + "a" + baseMark + baseMark + "bb")
	at := marksIn(body)
	if len(at) != 3 || at[0] != 0 || at[1] != len(baseMark)+1 || at[2] != 2*len(baseMark)+1 {
		t.Fatalf("marks at %v", at)
	}
	if marksIn([]byte("none")) != nil {
		t.Fatal("marks in a body without any")
	}
}
