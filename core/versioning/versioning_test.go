package versioning

import (
	"strings"
	"testing"
)

// TestSameVersion: the spellings each client treats as one version match,
// and the ones it tells apart do not.
func TestSameVersion(t *testing.T) {
	for _, c := range []struct {
		registry, report, asked string
		same                    bool
	}{
		// npm: semver, read loosely as npm reads versions.
		{npm, "1.0.1", "1.0.1", true},
		{npm, "v1.0.1", "1.0.1", true},
		{npm, "=1.0.1", "1.0.1", true},
		{npm, "1.0.1", "v1.0.1", true},
		{npm, "01.0.1", "1.0.1", true},
		{npm, "1.0.1+build.5", "1.0.1", true},
		{npm, "1.0.0rc1", "1.0.0-rc1", true},
		{npm, "1.0.0-rc.01", "1.0.0-rc.1", true},
		{npm, "1.0.0-RC1", "1.0.0-rc1", false}, // semver pre-releases keep their case
		{npm, "1.0.1", "1.0.10", false},
		{npm, "1.0.1", "1.0.1-0", false},
		{npm, "1.0", "1.0.0", false}, // not a version npm can hold: compared as written
		// PyPI: PEP 440, as pip's == selects.
		{pypi, "1.0.1", "1.0.01", true},
		{pypi, "1.0.1", "1.0.1.0", true},
		{pypi, "1.0.1", "v1.0.1", true},
		{pypi, "1.0.1", "1.0.1+local", true},
		{pypi, "1.0.1", "1.0.1+ubuntu.1", true},
		{pypi, "1.0.1+local", "1.0.1", false},
		{pypi, "1.0.1+local", "1.0.1+LOCAL", true},
		{pypi, "1.0.1+a-1", "1.0.1+a.01", true},
		{pypi, "1.0.1+a", "1.0.1+b", false},
		{pypi, "1.0.0", "1.0", true},
		{pypi, "1.0.0", "1", true},
		{pypi, "0!1.0", "1.0", true},
		{pypi, "1!1.0", "1.0", false},
		{pypi, "1.0.0rc1", "1.0.0RC1", true},
		{pypi, "1.0.0rc1", "1.0.0-rc1", true},
		{pypi, "1.0.0rc1", "1.0.0c1", true},
		{pypi, "1.0.0rc1", "1.0.0.pre1", true},
		{pypi, "1.0.0rc1", "1.0.0-preview-1", true},
		{pypi, "1.0.0rc1", "1.0.0rc01", true},
		{pypi, "1.0.0rc1", "1.0.0rc2", false},
		{pypi, "1.0a", "1.0alpha0", true},
		{pypi, "1.0b2", "1.0-beta.2", true},
		{pypi, "1.0.post1", "1.0-1", true},
		{pypi, "1.0.post1", "1.0-r1", true},
		{pypi, "1.0.post1", "1.0rev1", true},
		{pypi, "1.0.post0", "1.0-post", true},
		{pypi, "1.0.dev0", "1.0-dev", true},
		{pypi, "1.0.dev1", "1.0_dev_1", true},
		{pypi, "1.0.0a1.post2.dev3", "1.0A1-POST2-DEV3", true},
		{pypi, "1.0.1", "1.0.1.post1", false},
		{pypi, "1.0.1", "1.0.1a1", false},
		{pypi, "1.0.1", "1.0.1.dev0", false},
		{pypi, "1.0.1", "1.0.10", false},
		// Go: semver with a v; +incompatible is build metadata.
		{golang, "2.0.0", "v2.0.0+incompatible", true},
		{golang, "v2.0.0+incompatible", "v2.0.0", true},
		{golang, "1.0.1", "v1.0.1", true},
		{golang, "v1.2", "v1.2.0", true},
		{golang, "v1.0.0-20240101000000-abcdefabcdef", "v1.0.0-20240101000000-abcdefabcdef", true},
		{golang, "v1.0.0-rc.1", "v1.0.0-rc.2", false},
		{golang, "v1.0.1", "v1.0.10", false},
		// crates.io: semver; build metadata ignored.
		{crates, "1.0.1", "1.0.1+abc", true},
		{crates, "1.0.1", "1.0.2", false},
		// NuGet: normalised as NuGetVersion does.
		{nuget, "1.0", "1.0.0", true},
		{nuget, "1.0.0.0", "1.0.0", true},
		{nuget, "01.0.0", "1.0.0", true},
		{nuget, "1.0.0-Beta", "1.0.0-beta", true},
		{nuget, "1.0.0+meta", "1.0.0", true},
		{nuget, "1.0.0.1", "1.0.0", false},
		{nuget, "4.8.0.20230725", "4.8.0.20230725", true},
		// RubyGems: Gem::Version's canonical segments.
		{rubygems, "1.0.0", "1.0", true},
		{rubygems, "1.0.0", "1", true},
		{rubygems, "1.0.0-rc1", "1.0.0.pre.rc1", true},
		{rubygems, "1.0.0.pre", "1.0.0.PRE", false},
		{rubygems, "1.0.1", "1.0.10", false},
		// Maven: ComparableVersion's equality.
		{maven, "1.0", "1.0.0", true},
		{maven, "1.0-FINAL", "1.0", true},
		{maven, "1.0-ga", "1.0", true},
		{maven, "1.0-RC1", "1.0-rc-1", true},
		{maven, "1.0-cr1", "1.0-rc1", true},
		{maven, "1.0-a1", "1.0-alpha-1", true},
		{maven, "1.0-SNAPSHOT", "1.0-snapshot", true},
		{maven, "1.0-rc1", "1.0", false},
		{maven, "1.0.1", "1.0.10", false},
		{maven, "1-1", "1.1", false},
		{maven, "1.0-1", "1-1", true},
		// Packagist: Composer's normalisation.
		{packagist, "v1.0.1", "1.0.1", true},
		{packagist, "1.0.1", "1.0.1.0", true},
		{packagist, "1.0.0-RC1", "1.0.0rc1", true},
		{packagist, "1.0.0-b2", "1.0.0-beta2", true},
		{packagist, "1.0.0-beta2", "1.0.0-beta3", false},
		{packagist, "1.0.0-dev", "1.0.0.dev", true},
		{packagist, "dev-Main", "dev-main", true},
		// GitHub Actions: a semver tag with or without its v, a commit in
		// any case, a branch or short tag as written.
		{actions, "v35.7.7", "35.7.7", true},
		{actions, "0AACCFD150D50CCAEB58EBD88D36E91967A5F35B", "0aaccfd150d50ccaeb58ebd88d36e91967a5f35b", true},
		{actions, "v4", "v4.0.0", false},
		{actions, "main", "Main", false},
		{actions, "v4", "v4", true},
	} {
		if got := Matches(c.registry, c.report, c.asked); got != c.same {
			t.Errorf("%s: a report of %q matches %q: %v, want %v (canonical %q and %q)", c.registry, c.report, c.asked, got, c.same,
				Canonical(c.registry, c.report), Canonical(c.registry, c.asked))
		}
	}
}

// TestCheck: what each registry's client can select passes; spellings a
// report could never match are refused with the registry named.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		registry, v string
		ok          bool
	}{
		{npm, "1.0.1", true}, {npm, "v1.0.1", true}, {npm, "=1.0.1", true}, {npm, "1.0.1-beta.2+b", true},
		{npm, "1.0", false}, {npm, "latest", false}, {npm, "1.0.x", false}, {npm, "1.0.1-", false}, {npm, "1.0.1-a..b", false},
		{pypi, "1.0.1", true}, {pypi, "2.0rc1", true}, {pypi, "1.0.post1", true}, {pypi, "1!2.0", true}, {pypi, "1.0+abc.5", true},
		{pypi, "1.0-foo-bar", false}, {pypi, "latest", false}, {pypi, "1.0+", false}, {pypi, "1.0+a..b", false}, {pypi, "1..0", false},
		{golang, "v1.0.1", true}, {golang, "1.0.1", true}, {golang, "v2.0.0+incompatible", true}, {golang, "v0.0.0-20240101000000-abcdefabcdef", true},
		{golang, "v1.0.1rc1", false}, {golang, "master", false}, {golang, "v1.2-pre", false},
		{nuget, "1.0.1", true}, {nuget, "1.0.1.2", true}, {nuget, "1.0.1-beta", true}, {nuget, "1.0.1.2.3", false}, {nuget, "v1.0", false},
		{rubygems, "1.0.1", true}, {rubygems, "1.0.1.pre", true}, {rubygems, "1.0.1-rc1", true}, {rubygems, "v1.0", false},
		{packagist, "v1.0.1", true}, {packagist, "1.0.1-beta2", true}, {packagist, "dev-main", true}, {packagist, "banana", false},
		{maven, "anything-1", true},
	} {
		err := Check(c.registry, c.v)
		if (err == nil) != c.ok {
			t.Errorf("Check(%s, %q) = %v, want ok=%v", c.registry, c.v, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), c.registry) {
			t.Errorf("Check(%s, %q): %v does not name the registry", c.registry, c.v, err)
		}
	}
}

// TestCanonicalList: a list canonicalised once answers queries as
// Matches does, and empty entries are dropped.
func TestCanonicalList(t *testing.T) {
	list := CanonicalList(pypi, " 1.0.0, 2.0rc1 ,, 3.0+abc")
	if list != "1,2rc1,3+abc" {
		t.Fatalf("CanonicalList = %q", list)
	}
	for v, want := range map[string]bool{"1.0": true, "2.0.0-rc.1": true, "3.0+ABC": true, "3.0": false, "2.0": false} {
		if got := NewQuery(pypi, v).In(list); got != want {
			t.Errorf("%q in %q: %v, want %v", v, list, got, want)
		}
	}
	if !Matches(npm, "", "1.0.0") || !Matches(npm, "1.0.0", "") {
		t.Fatal("an empty list or version matches everything")
	}
}

// FuzzCanonical: canonical forms are stable (canonicalising one again
// changes nothing for the semver, PyPI, NuGet and RubyGems forms), never
// empty for a non-empty version, and Check's verdict agrees with
// Matches: a version that passes Check matches itself.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"1.0.1", "v1.0.1", "1.0.0rc1", "1!2.0.post1.dev3+abc", "v2.0.0+incompatible", "1.0-SNAPSHOT", "dev-main", "1.0.0.0", "1.0.0-pre.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.Contains(v, ",") {
			return // a list's separator: never in a version
		}
		for _, reg := range []string{npm, pypi, golang, crates, nuget, rubygems, maven, packagist} {
			c := Canonical(reg, v)
			if strings.TrimSpace(v) != "" && c == "" {
				t.Fatalf("%s: %q has an empty canonical form", reg, v)
			}
			if Check(reg, v) == nil && strings.TrimSpace(v) != "" {
				if !Matches(reg, v, v) {
					t.Fatalf("%s: %q does not match itself", reg, v)
				}
				switch reg {
				case npm, golang, crates, nuget, rubygems:
					if again := Canonical(reg, c); again != c {
						t.Fatalf("%s: canonical of %q is %q, then %q", reg, v, c, again)
					}
				}
			}
		}
	})
}

// BenchmarkCanonical: the index canonicalises every listed version at load.
func BenchmarkCanonical(b *testing.B) {
	for _, c := range []struct{ reg, v string }{{npm, "4.17.21"}, {pypi, "1.0.1"}, {pypi, "2.0.0rc1"}, {golang, "v1.2.3"}} {
		b.Run(c.reg+"/"+c.v, func(b *testing.B) {
			for b.Loop() {
				_ = Canonical(c.reg, c.v)
			}
		})
	}
}
