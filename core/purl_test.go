package core

import "testing"

// PackagePurl is ParsePurl's inverse for every registry with a purl type,
// names with a namespace included; registries without one give "".
func TestPackagePurl(t *testing.T) {
	for _, c := range []struct{ registry, name, purl string }{
		{RegistryNPM, "left-pad", "pkg:npm/left-pad"},
		{RegistryNPM, "@evil/scope-pkg", "pkg:npm/%40evil/scope-pkg"},
		{RegistryPyPI, "requests", "pkg:pypi/requests"},
		{RegistryRubyGems, "rails", "pkg:gem/rails"},
		{RegistryCrates, "serde", "pkg:cargo/serde"},
		{RegistryGo, "github.com/boltdb-go/bolt", "pkg:golang/github.com/boltdb-go/bolt"},
		{RegistryMaven, "org.example:lib", "pkg:maven/org.example/lib"},
		{RegistryNuGet, "Newtonsoft.Json", "pkg:nuget/Newtonsoft.Json"},
		{RegistryPackagist, "vendor/pkg", "pkg:composer/vendor/pkg"},
		{RegistryVSCode, "ms-python.python", "pkg:vscode-extension/ms-python/python"},
	} {
		got := PackagePurl(c.registry, c.name)
		if got != c.purl {
			t.Errorf("PackagePurl(%s, %s) = %q, want %q", c.registry, c.name, got, c.purl)
			continue
		}
		q, err := ParsePurl(got)
		if err != nil || q.Ecosystem != c.registry || q.ResourceIdentifier != c.name {
			t.Errorf("ParsePurl(%s) = %+v, %v: not %s %s", got, q, err, c.registry, c.name)
		}
	}
	if q, err := ParsePurl("pkg:vscode-extension/acme/pad@1.0.1?repository_url=https://open-vsx.org"); err != nil || q.Ecosystem != RegistryOpenVSX || q.ResourceIdentifier != "acme.pad" || q.Version != "1.0.1" {
		t.Errorf("an Open VSX purl: %+v %v", q, err)
	}
	for _, c := range []struct{ registry, name, version, purl string }{
		{RegistryNPM, "@evil/x", "1.0.0", "pkg:npm/%40evil/x@1.0.0"},
		{RegistryVSCode, "acme.pad", "1.0.1", "pkg:vscode-extension/acme/pad@1.0.1"},
		{RegistryOpenVSX, "acme.pad", "1.0.1", "pkg:vscode-extension/acme/pad@1.0.1?repository_url=https:%2F%2Fopen-vsx.org"},
		{RegistryOpenVSX, "acme.pad", "", "pkg:vscode-extension/acme/pad?repository_url=https:%2F%2Fopen-vsx.org"},
	} {
		got := VersionPurl(c.registry, c.name, c.version)
		q, err := ParsePurl(got)
		if got != c.purl || err != nil || q.Ecosystem != c.registry || q.ResourceIdentifier != c.name || q.Version != c.version {
			t.Errorf("VersionPurl(%s, %s, %s) = %q (read back %+v, %v), want %q", c.registry, c.name, c.version, got, q, err, c.purl)
		}
	}
	for _, r := range []string{RegistryDockerHub, ""} {
		if p := PackagePurl(r, "x"); p != "" {
			t.Errorf("PackagePurl(%q) = %q, want none", r, p)
		}
	}
}
