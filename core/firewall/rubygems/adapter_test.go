package rubygems

import (
	"crypto/md5"
	"encoding/hex"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

func TestSplitFull(t *testing.T) {
	for full, want := range map[string][2]string{
		"rails-7.1.0":                  {"rails", "7.1.0"},
		"rails-html-sanitizer-1.6.0":   {"rails-html-sanitizer", "1.6.0"},
		"nokogiri-1.15.0-x86_64-linux": {"nokogiri", "1.15.0"},
		"aws-sdk-s3-1.2.3":             {"aws-sdk-s3", "1.2.3"},
		"ffi-1.16.3-x64-mingw-ucrt":    {"ffi", "1.16.3"},
	} {
		if n, v, ok := SplitFull(full); !ok || n != want[0] || v != want[1] {
			t.Errorf("SplitFull(%q) = %q %q %v", full, n, v, ok)
		}
	}
	for _, bad := range []string{"rails", "-1.0", "a-b"} {
		if _, _, ok := SplitFull(bad); ok {
			t.Errorf("SplitFull(%q) ok", bad)
		}
	}
}

func TestListing(t *testing.T) {
	info := "---\n1.0.0 |checksum:aa\n1.0.1 |checksum:bb\n1.0.1-java |checksum:cc\n"
	judge := func(v string) (bool, string) { return v == "1.0.1", "bad" }
	r, err := Adapter{}.Rewrite(firewall.Document{Body: []byte(info)}, judge, "B")
	if err != nil || string(r.Body) != "---\n1.0.0 |checksum:aa\n" {
		t.Fatalf("info: %q %v", r.Body, err)
	}
	versions := "created_at: 2026-01-01T00:00:00Z\n---\nclean 1.0.0 11\nevil 1.0.0,1.0.1,1.0.1-java 22\nevil -1.0.1 33\ngone 1.0.1 44\n"
	judges := func(name string) firewall.Judge {
		if name == "clean" {
			return nil
		}
		return judge
	}
	asked := 0
	out, err := Adapter{}.RewriteListing(firewall.Document{Body: []byte(versions)}, judges, func(name string) ([]byte, error) {
		asked++
		return r.Body, nil
	})
	sum := md5.Sum(r.Body)
	want := "created_at: 2026-01-01T00:00:00Z\n---\nclean 1.0.0 11\nevil 1.0.0 " + hex.EncodeToString(sum[:]) + "\n"
	if err != nil || string(out.Body) != want || asked != 1 {
		t.Fatalf("versions:\n%s\nwant\n%s (%d /info asked)", out.Body, want, asked)
	}
}
