package oci

import (
	"errors"
	"strings"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

func TestParse(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	for path, want := range map[string]Request{
		"":                             {Kind: Base},
		"library/nginx/manifests/1.25": {Kind: Manifest, Name: "library/nginx", Reference: "1.25"},
		"a/b/c/manifests/" + d:         {Kind: Manifest, Name: "a/b/c", Reference: d},
		"nginx/blobs/" + d:             {Kind: Blob, Name: "nginx", Reference: d},
		"org/app/tags/list":            {Kind: Tags, Name: "org/app"},
		"manifests/x/manifests/1":      {Kind: Manifest, Name: "manifests/x", Reference: "1"},
	} {
		got, ok, err := Parse(path)
		if err != nil || !ok || got != want {
			t.Errorf("Parse(%q) = %+v %v %v, want %+v", path, got, ok, err, want)
		}
	}
	for _, path := range []string{"nginx", "nginx/uploads/", "_catalog"} {
		if _, ok, err := Parse(path); ok || err != nil {
			t.Errorf("Parse(%q): %v %v, want an unknown path", path, ok, err)
		}
	}
	for _, path := range []string{"Nginx/manifests/1", "a//b/manifests/1", "a/../b/manifests/1", "a/blobs/1.0", "a/manifests/-x", "a%2fb/manifests/1"} {
		var u *firewall.Unjudgeable
		if _, _, err := Parse(path); !errors.As(err, &u) {
			t.Errorf("Parse(%q): %v, want unjudgeable", path, err)
		}
	}
}

func TestChallengeAndReports(t *testing.T) {
	c, ok := ParseChallenge(`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"`)
	if !ok || c.Realm != "https://auth.docker.io/token" || c.Service != "registry.docker.io" {
		t.Fatalf("%+v %v", c, ok)
	}
	if _, ok := ParseChallenge(`Basic realm="x"`); ok {
		t.Fatal("a Basic challenge is not a bearer one")
	}
	d := "sha256:" + strings.Repeat("cd", 32)
	r := ReportedOf([]core.Threat{{CanonicalKey: "container:docker.io/library/nginx:1.25", ResourceIdentifier: "nginx:1.25"},
		{CanonicalKey: "container:ghcr.io/library/nginx@" + d, ResourceIdentifier: "ghcr.io/library/nginx@" + d}})
	if len(r.Tags["1.25"]) != 1 || len(r.Digests[d]) != 1 || len(r.Every) != 0 || !r.Any() {
		t.Fatalf("%+v", r)
	}
	// A report of the repository alone (its key is :latest) blocks every
	// tag; one of :latest written out blocks that tag.
	for ref, every := range map[string]bool{"nginx": true, "ghcr.io/org/tool": true, "localhost:5000/app": true, "nginx:latest": false, "localhost:5000/app:latest": false} {
		r := ReportedOf([]core.Threat{{CanonicalKey: "container:docker.io/library/nginx:latest", ResourceIdentifier: ref}})
		if (len(r.Every) == 1) != every || every == (len(r.Tags["latest"]) == 1) {
			t.Errorf("%s: %+v", ref, r)
		}
	}
	if got := Children([]byte(`{"manifests":[{"digest":"` + d + `"},{"digest":"bad"}]}`)); len(got) != 1 || got[0] != d {
		t.Fatalf("children %v", got)
	}
}

// FuzzParse: a request the firewall serves names a repository and a
// reference the distribution grammar accepts, never one that climbs: no
// name with a dot-segment, an empty segment or an escape, no reference
// that is a dot-segment or holds a separator. ("0.." is a tag the
// grammar allows, [A-Za-z0-9_][A-Za-z0-9_.-]*: one path segment, not a
// climb; the fuzzer found that the first version of this check said
// otherwise.)
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "library/nginx/manifests/1.25", "a/blobs/sha256:" + strings.Repeat("0", 64), "a/tags/list", "a/../b/manifests/1", "a%2fb/manifests/x",
		"0/manifests/0..", "a/manifests/..", "a/manifests/."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		r, ok, err := Parse(p)
		if err != nil || !ok || r.Kind == Base {
			return
		}
		for _, bad := range []string{"..", "//", "%", "?", "#", "\\"} {
			if strings.Contains(r.Name, bad) {
				t.Fatalf("%q: %+v", p, r)
			}
		}
		if r.Reference == "." || r.Reference == ".." || strings.ContainsAny(r.Reference, "/%?#\\") {
			t.Fatalf("%q: %+v", p, r)
		}
	})
}

// A name with a registry host in front is the same image; Docker Hub's
// official images are under library/.
func TestNames(t *testing.T) {
	for _, c := range []struct{ name, upstreamHost, match, upstream string }{
		{"app", "registry-1.docker.io", "library/app", "library/app"},
		{"library/app", "registry-1.docker.io", "library/app", "library/app"},
		{"docker.io/library/app", "registry-1.docker.io", "library/app", "library/app"},
		{"docker.io/app", "mirror.example:5000", "library/app", "library/app"},
		{"org/tool", "mirror.example:5000", "org/tool", "org/tool"},
		{"ghcr.io/org/tool", "mirror.example:5000", "org/tool", "org/tool"},
		{"localhost/org/tool", "mirror.example:5000", "org/tool", "org/tool"},
		{"app", "mirror.example:5000", "library/app", "app"},
	} {
		m, u := Names(c.name, c.upstreamHost)
		if m != c.match || u != c.upstream {
			t.Errorf("Names(%q, %q) = %q %q, want %q %q", c.name, c.upstreamHost, m, u, c.match, c.upstream)
		}
	}
}

// A tag list's next page: the upstream's n and last, below the client's
// name, never the upstream's host or name of the repository.
func TestNextLink(t *testing.T) {
	for up, want := range map[string]string{
		`</v2/library/app/tags/list?last=b&n=2>; rel="next"`:                             `</v2/app/tags/list?last=b&n=2>; rel="next"`,
		`<https://upstream.example/v2/library/app/tags/list?n=2&last=b&x=1>; rel="next"`: `</v2/app/tags/list?last=b&n=2>; rel="next"`,
		`</v2/library/app/tags/list?last=b>; rel="prev"`:                                 "",
		"":                  "",
		"not a link":        "",
		`<%zz>; rel="next"`: "",
	} {
		if got := NextLink(up, "app"); got != want {
			t.Errorf("NextLink(%q) = %q, want %q", up, got, want)
		}
	}
}
