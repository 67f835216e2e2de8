package rubygems

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

// A gem file's full name reads every way Gem::Version and Gem::Platform
// allow: a name may have a part that starts with a digit (evil-2x,
// tdfw-evil-23a01ad3, acme-2fa); where two readings are possible both are
// given, for the proxy to resolve by each gem's /info.
func TestReadings(t *testing.T) {
	for full, want := range map[string]string{
		"rails-7.1.0":                    "rails 7.1.0",
		"rails-html-sanitizer-1.6.0":     "rails-html-sanitizer 1.6.0",
		"nokogiri-1.15.0-x86_64-linux":   "nokogiri 1.15.0-x86_64-linux",
		"aws-sdk-s3-1.2.3":               "aws-sdk-s3 1.2.3",
		"ffi-1.16.3-x64-mingw-ucrt":      "ffi 1.16.3-x64-mingw-ucrt",
		"evil-2x-1.0.1":                  "evil-2x 1.0.1",
		"tdfw-evil-23a01ad3-1.0.1":       "tdfw-evil-23a01ad3 1.0.1",
		"acme-2fa-1.0.0":                 "acme-2fa 1.0.0",
		"evil-2-1.0.1":                   "evil-2 1.0.1",
		"rails-5-x-1.0":                  "rails-5-x 1.0|rails 5-x-1.0",
		"x-1.0.0.pre.rc1-java":           "x 1.0.0.pre.rc1-java",
		"gem-3.0a-universal-darwin-20":   "gem-3.0a-universal-darwin 20|gem 3.0a-universal-darwin-20",
		"grpc-1.60.0-aarch64-linux-musl": "grpc 1.60.0-aarch64-linux-musl",
	} {
		var got []string
		for _, r := range Readings(full) {
			got = append(got, r.Name+" "+r.Version)
		}
		if strings.Join(got, "|") != want {
			t.Errorf("Readings(%q) = %q, want %q", full, got, want)
		}
	}
	for _, bad := range []string{"rails", "-1.0", "a-b", "evil-2x", "a-1.0--java", "a-1..0", ".-0", "..-1.0-java"} {
		if rs := Readings(bad); len(rs) != 0 {
			t.Errorf("Readings(%q) = %v", bad, rs)
		}
	}
	if ReportVersion("1.0.0-x86_64-linux") != "1.0.0" || ReportVersion("-1.0.1") != "1.0.1" || ReportVersion("2.0") != "2.0" {
		t.Error("ReportVersion")
	}
}

// /info loses refused versions, each platform's line judged as listed;
// /versions loses them from every line, and every line of a gem with
// anything refused carries the MD5 of its /info as served, since Bundler
// checks the /info it downloads against the gem's last line (here a line
// with nothing refused, after one with a refused version).
func TestListing(t *testing.T) {
	info := "---\n1.0.0 |checksum:aa\n1.0.1 |checksum:bb\n1.0.1-java |checksum:cc\n1.0.2-java |checksum:dd\n"
	var judged []string
	judge := func(v string) (bool, string) {
		judged = append(judged, v)
		return ReportVersion(v) == "1.0.1" || v == "1.0.2-java", "bad"
	}
	r, err := Adapter{}.Rewrite(firewall.Document{Body: []byte(info)}, judge, "B")
	if err != nil || string(r.Body) != "---\n1.0.0 |checksum:aa\n" {
		t.Fatalf("info: %q %v", r.Body, err)
	}
	if strings.Join(judged, " ") != "1.0.0 1.0.1 1.0.1-java 1.0.2-java" {
		t.Fatalf("judged %q: each line as listed", judged)
	}
	versions := "created_at: 2026-01-01T00:00:00Z\n---\nclean 1.0.0 11\nevil 1.0.0,1.0.1,1.0.1-java 22\nevil -1.0.1 33\ngone 1.0.1 44\nevil 1.0.2-java,1.0.3 55\n"
	var asked []string
	var recentAsked map[string]bool
	judges := func(names []string, recent map[string]bool) (map[string]firewall.Judge, error) {
		asked, recentAsked = names, recent
		return map[string]firewall.Judge{"evil": judge, "gone": judge}, nil
	}
	infos := 0
	out, err := Adapter{}.RewriteListing(firewall.Document{Body: []byte(versions)}, judges, func(name string) ([]byte, error) {
		infos++
		return r.Body, nil
	})
	sum := hex.EncodeToString(func() []byte { h := md5.Sum(r.Body); return h[:] }())
	want := "created_at: 2026-01-01T00:00:00Z\n---\nclean 1.0.0 11\nevil 1.0.0 " + sum + "\nevil 1.0.3 " + sum + "\n"
	if err != nil || string(out.Body) != want || infos != 1 {
		t.Fatalf("versions:\n%s\nwant\n%s (%d /info asked)", out.Body, want, infos)
	}
	if strings.Join(asked, " ") != "clean evil gone" || !recentAsked["evil"] || len(recentAsked) != 3 {
		t.Fatalf("judges asked for %q, recent %v", asked, recentAsked)
	}
}
