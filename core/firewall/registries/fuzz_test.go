package registries

import (
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

// FuzzRoutes: for the adapters whose upstream path is rebuilt from what
// they judged (Maven, crates.io, RubyGems, NuGet), no request path makes
// an upstream path that climbs, escapes or adds a query, and every
// artifact route names the version it is judged by.
func FuzzRoutes(f *testing.F) {
	for _, s := range []string{"com/example/lib/maven-metadata.xml.sha1", "com/example/lib/1.0/lib-1.0.jar", "org/%2e%2e/lib/1/lib-1.jar",
		"config.json", "se/rd/serde_json", "crates/serde/1.0.0/download", "crates/a%2f..%2fb/1/download",
		"versions", "info/rails", "gems/rails-7.1.0.gem", "gems/rails-5-x-1.0.gem", "gems/evil-2x-1.0.1-java.gem", "quick/Marshal.4.8/rails-7.1.0.gemspec.rz", "info/..%2fversions", "gems/.-0.gem", "gems/..-1.0-java.gem",
		"v3/index.json", "res/PackageBaseAddress_3.0.0/Newtonsoft.Json/index.json", "res/PackageBaseAddress_3.0.0/a/1.0.0/a.1.0.0.nupkg", "res/RegistrationsBaseUrl/a/page/1/2.json", "res/RegistrationsBaseUrl_3.6.0/a/1.0.0.json"} {
		f.Add(s)
	}
	adapters := map[string]firewall.Adapter{}
	for _, a := range All() {
		switch a.Registry() {
		case "maven", "cargo", "rubygems", "nuget":
			adapters[a.Registry()] = a
		}
	}
	f.Fuzz(func(t *testing.T, p string) {
		for reg, a := range adapters {
			first, ok, err := a.Route(firewall.Request{Path: p})
			if err != nil || !ok {
				continue
			}
			// Every reading of an ambiguous path, and the document that
			// says whether it is the file's, is as safe as the route.
			for _, rt := range append([]firewall.Route{first}, first.Readings...) {
				for _, up := range []string{rt.Upstream, rt.Index, rt.Listed} {
					u := "/" + up + "/"
					for _, bad := range []string{"/../", "/./", "//", "%", "\\", "?", "#"} {
						if up != "" && strings.Contains(u, bad) {
							t.Fatalf("%s: %q routes to upstream path %q (%q)", reg, p, up, bad)
						}
					}
				}
				if rt.Kind == firewall.Artifact && (rt.Version == "" || rt.Name == "") {
					t.Fatalf("%s: %q: an artifact route without its name or version: %+v", reg, p, rt)
				}
			}
		}
	})
}
