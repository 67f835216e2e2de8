package api

import (
	"slices"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

func TestHighestRelease(t *testing.T) {
	for _, c := range []struct {
		versions []string
		prefix   string
		want     string
	}{
		{[]string{"1.0.0", "1.10.0", "1.9.0", "2.0.0-beta.1"}, "v", "1.10.0"},
		{[]string{"2.0.0-beta.1", "2.0.0-alpha"}, "v", "2.0.0-beta.1"},
		{[]string{"v1.0.0", "v1.2.0", "v1.3.0-rc.1", "not-semver"}, "", "v1.2.0"},
		{[]string{"latest", "x"}, "v", ""},
		{nil, "", ""},
	} {
		if got := highestRelease(slices.Values(c.versions), c.prefix); got != c.want {
			t.Errorf("%v: %q, want %q", c.versions, got, c.want)
		}
	}
}

// A hostile project page cannot inject markup through the rewritten page.
func TestPyPIPageHostile(t *testing.T) {
	page := `<a href="f/x-1.0.tar.gz#sha256=aa" data-requires-python="&gt;=3&quot;&gt;&lt;script&gt;" data-a"><script>alert(1)</script>x-1.0.tar.gz</a>`
	out, err := rewritePyPIHTML([]byte(page), "https://up.example/simple/x/", "https://fw.example/simple/x/", "x", firewall.Verdict{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "<script>") || strings.Contains(string(out), `data-a"`) || !strings.Contains(string(out), `data-requires-python="&gt;=3&#34;&gt;&lt;script&gt;"`) {
		t.Fatalf("%s", out)
	}
}
