package goproxy

import (
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

func TestHighest(t *testing.T) {
	for _, c := range []struct {
		versions []string
		want     string
	}{
		{[]string{"v1.0.0", "v1.2.0", "v1.3.0-rc.1", "not-semver"}, "v1.2.0"},
		{[]string{"v2.0.0-beta.1", "v2.0.0-alpha"}, "v2.0.0-beta.1"},
		{[]string{"latest", "x"}, ""},
		{nil, ""},
	} {
		if got := (Adapter{}).Highest(c.versions); got != c.want {
			t.Errorf("%v: %q, want %q", c.versions, got, c.want)
		}
	}
}

// FuzzRoute: whatever path a client sends, the upstream path the firewall
// fetches is rebuilt from a module and version golang.org/x/mod accepts
// (or a checked sumdb path): no dot segment, no escape the upstream could
// decode into one, and a file route names its version.
func FuzzRoute(f *testing.F) {
	for _, s := range []string{"example.com/m/@v/list", "example.com/m/@v/v1.0.1.zip", "example.com/m/@latest", "sumdb/sum.golang.org/supported",
		"sumdb/%2e%2e/example.com/m/@v/v1.0.1.zip", "example.com/m/@v/..%2f..%2fx%2f@v%2fv1.0.1.zip", "example.com/!m/@v/v2.0.0+incompatible.info"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rt, ok, err := (Adapter{}).Route(firewall.Request{Path: p})
		if err != nil || !ok {
			return
		}
		u := "/" + strings.TrimSuffix(rt.Upstream, "/") + "/" // a trailing slash is the path's own
		for _, bad := range []string{"/../", "/./", "//", "%", "\\", "?", "#"} {
			if strings.Contains(u, bad) {
				t.Fatalf("%q routes to upstream path %q (%q)", p, rt.Upstream, bad)
			}
		}
		if rt.Kind == firewall.Artifact && (rt.Version == "" || !strings.Contains(rt.Upstream, "/@v/")) {
			t.Fatalf("%q: an artifact route without its version: %+v", p, rt)
		}
	})
}
