package api

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
