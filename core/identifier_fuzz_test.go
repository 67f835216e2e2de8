package core

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzCanonicalKey: normalisation is idempotent — the canonical identifier
// of an accepted identifier is accepted and maps to the same key — and
// never panics.
func FuzzCanonicalKey(f *testing.F) {
	for _, s := range []struct{ typ, reg, id string }{
		{"package", "npm", "@Scope/LoDash"}, {"package", "pypi", "A_b.C"}, {"package", "crates.io", "Serde_Json"},
		{"package", "maven", "g:a"}, {"package", "go", "github.com/a/b"}, {"package", "packagist", "v/p"},
		{"package", "vscode", "p.e"}, {"url", "", "HTTP://Ex.com:80/a/../b?c#d"}, {"url", "", "https://u:p@[::1]:443/"},
		{"domain", "", "Bücher.Example."}, {"ip", "", "::ffff:1.2.3.4"}, {"repository", "", "GitHub.com/a/b.git/"},
		{"wallet", "", "0xABCDEF0123456789abcdef0123456789ABCDEF01"}, {"container", "", "Quay.io/a/b:T@sha256:" + strings.Repeat("A", 64)},
		{"container", "", "localhost:5000/x"}, {"container", "", "nginx"},
	} {
		f.Add(s.typ, s.reg, s.id)
	}
	f.Fuzz(func(t *testing.T, typ, reg, id string) {
		rt := ReportType(typ)
		key, err := CanonicalKey(rt, reg, id)
		if err != nil {
			if _, ok := err.(*FieldError); !ok {
				t.Fatalf("non-field error %T: %v", err, err)
			}
			return
		}
		rest := strings.TrimPrefix(key, typ+":")
		if rt == TypePackage {
			rest = strings.TrimPrefix(rest, reg+":")
		}
		again, err := CanonicalKey(rt, reg, rest)
		if err != nil || again != key {
			t.Fatalf("%s %s %q: key %q, re-normalised %q (%v)", typ, reg, id, key, again, err)
		}
	})
}

// pep503Reference is PEP 503's normal form as the PEP writes it: lower
// case, every run of - _ . replaced by one "-".
var pep503Reference = regexp.MustCompile(`[-_.]+`)

// FuzzNormalizePyPIName holds NormalizePyPIName to the PEP's own
// expression on any text.
func FuzzNormalizePyPIName(f *testing.F) {
	for _, s := range []string{"", "requests", "Django_REST.framework", "a--b", "-a-", "__init__", "a._-b", "ÉCOLE_Ünïcode", "\xff_\xfe..x", "--"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		want := pep503Reference.ReplaceAllString(strings.ToLower(name), "-")
		if got := NormalizePyPIName(name); got != want {
			t.Fatalf("NormalizePyPIName(%q) = %q, want %q", name, got, want)
		}
	})
}

// BenchmarkNormalizePyPIName: a name already in normal form (as checks
// mostly send them) and one that is not, against the PEP's expression.
func BenchmarkNormalizePyPIName(b *testing.B) {
	for _, name := range []string{"bench-pypi-0123457", "Django_REST.Framework"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				NormalizePyPIName(name)
			}
		})
		b.Run(name+"/pep503", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pep503Reference.ReplaceAllString(strings.ToLower(name), "-")
			}
		})
	}
}
