package rubygems

import (
	"testing"

	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/fwtest"
)

// FuzzRewrite: whatever /info file the upstream sends, no line of a
// refused version is left, and rewriting the output changes nothing.
func FuzzRewrite(f *testing.F) {
	f.Add([]byte("---\n1.0.0 |checksum:aa\n1.0.1 |checksum:bb\n1.0.1-java |checksum:cc\n2.0.0 a:>= 1|checksum:dd,ruby:>= 2.7\n"))
	f.Add([]byte("created_at: 2026-01-01\n---\n\n1.0.1\n evil |x\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		fwtest.Rewrite(t, Adapter{}, firewall.Document{Body: body, Name: "x", URL: "https://rubygems.invalid/info/x"}, nil)
	})
}
