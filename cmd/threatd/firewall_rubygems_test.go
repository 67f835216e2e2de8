package main_test

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// rubyGem publishes a gem in u's compact index (under /rubygems): a .gem
// per version built by the real gem command, its quick gemspec, an /info
// line with its checksum, the versions API's created_at, and /versions
// and /names over every gem published so far. A version with a platform
// is written as the index lists it (1.0.0-java).
func rubyGem(u *fakeregistry.Registry, t *testing.T, name string, versions []string, at []time.Time) {
	t.Helper()
	gem := needTool(t, "gem")
	ruby := needTool(t, "ruby")
	info := "---\n"
	var api []map[string]any
	for i, v := range versions {
		dir := t.TempDir()
		number, platform, _ := strings.Cut(v, "-")
		platformLine := ""
		if platform != "" {
			platformLine = fmt.Sprintf("  s.platform = %q\n", platform)
		}
		spec := fmt.Sprintf("Gem::Specification.new do |s|\n  s.name = %q\n  s.version = %q\n%s  s.summary = \"threatd test gem\"\n  s.authors = [\"threatd\"]\n  s.files = [\"lib/%s.rb\"]\nend\n", name, number, platformLine, name)
		_ = os.MkdirAll(filepath.Join(dir, "lib"), 0o755)
		_ = os.WriteFile(filepath.Join(dir, "lib", name+".rb"), []byte("module Fw; VERSION = "+fmt.Sprintf("%q", v)+"; end\n"), 0o644)
		_ = os.WriteFile(filepath.Join(dir, "x.gemspec"), []byte(spec), 0o644)
		if out, err := exec.Command(gem, "build", "-C", dir, "x.gemspec").CombinedOutput(); err != nil {
			t.Fatalf("gem build: %v\n%s", err, out)
		}
		file := filepath.Join(dir, name+"-"+v+".gem")
		if out, err := exec.Command(ruby, "-rzlib", "-rrubygems/package", "-e",
			`File.binwrite(ARGV[1], Zlib::Deflate.deflate(Marshal.dump(Gem::Package.new(ARGV[0]).spec)))`, file, file+".rz").CombinedOutput(); err != nil {
			t.Fatalf("quick gemspec: %v\n%s", err, out)
		}
		body, _ := os.ReadFile(file)
		rz, _ := os.ReadFile(file + ".rz")
		sum := sha256.Sum256(body)
		u.Put("/rubygems/gems/"+name+"-"+v+".gem", "application/octet-stream", 31536000, body)
		u.Put("/rubygems/quick/Marshal.4.8/"+name+"-"+v+".gemspec.rz", "application/octet-stream", 31536000, rz)
		info += v + " |checksum:" + hex.EncodeToString(sum[:]) + "\n"
		if platform == "" {
			platform = "ruby"
		}
		api = append(api, map[string]any{"number": number, "platform": platform, "created_at": at[i].UTC().Format("2006-01-02T15:04:05.000Z")})
	}
	u.Put("/rubygems/info/"+name, "text/plain; charset=utf-8", 60, []byte(info))
	apiJSON, _ := json.Marshal(api)
	u.Put("/rubygems/api/v1/versions/"+name+".json", "application/json", 60, apiJSON)
	u.Mu.Lock()
	var names []string
	for p := range u.Files {
		if n, ok := strings.CutPrefix(p, "/rubygems/info/"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	vs := "created_at: 2026-01-01T00:00:00Z\n---\n"
	for _, n := range names {
		body := u.Files["/rubygems/info/"+n].Body
		var list []string
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n")[1:] {
			list = append(list, strings.Fields(line)[0])
		}
		sum := md5.Sum(body)
		vs += n + " " + strings.Join(list, ",") + " " + hex.EncodeToString(sum[:]) + "\n"
	}
	u.Mu.Unlock()
	u.Put("/rubygems/versions", "text/plain; charset=utf-8", 60, []byte(vs))
	u.Put("/rubygems/names", "text/plain; charset=utf-8", 60, []byte("---\n"+strings.Join(names, "\n")+"\n"))
}

// bundleProject is a Gemfile of deps whose source is d's firewall with
// tok in its URL, and the environment of a bundle that installs it into a
// directory of its own, trusting the daemon's certificate.
func bundleProject(t *testing.T, in *instance, d *daemon, tok string, deps ...string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	src := "https://threatd:" + tok + "@" + strings.TrimPrefix(d.base, "https://") + base + "/firewall/rubygems/"
	gemfile := fmt.Sprintf("source %q\n", src)
	for _, dep := range deps {
		name, req, _ := strings.Cut(dep, " ")
		gemfile += fmt.Sprintf("gem %q, %q\n", name, req)
	}
	if err := os.WriteFile(filepath.Join(dir, "Gemfile"), []byte(gemfile), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	return dir, []string{"HOME=" + home, "BUNDLE_USER_HOME=" + filepath.Join(home, ".bundle"), "BUNDLE_PATH=" + filepath.Join(dir, "vendor"),
		"BUNDLE_APP_CONFIG=" + filepath.Join(dir, ".bundle"), "SSL_CERT_FILE=" + in.certFile(), "BUNDLE_SSL_CA_CERT=" + in.certFile(),
		"BUNDLE_RETRY=0", "BUNDLE_SILENCE_ROOT_WARNING=1", "GEM_HOME=" + filepath.Join(home, "gems")}
}

// TestFirewallRubyGems: the real Bundler and gem install through the
// firewall's compact index: a clean gem installs; a reported version
// leaves /info and /versions (whose checksums are those of the /info
// files served, or Bundler would refuse them); its .gem and quick gemspec
// are 403 with the threat named; a Gemfile.lock that pins it fails; a
// withdrawal unblocks; a version published now is held.
func TestFirewallRubyGems(t *testing.T) {
	t.Parallel()
	bundle := needTool(t, "bundle")
	gem := needTool(t, "gem")
	u := fakeregistry.New(t)
	old := fakeregistry.OldTimes(2)
	rubyGem(u, t, "fw-clean-rb", []string{"1.0.0"}, old[:1])
	rubyGem(u, t, "fw-evil-rb", []string{"1.0.0", "1.0.1"}, old)
	rubyGem(u, t, "fw-fresh-rb", []string{"1.0.0", "1.1.0"}, []time.Time{old[0], time.Now().Add(-10 * time.Minute)})
	// Names with a part that starts with a digit, read by the versions
	// their /info lists; a platform's gem pushed now for an old version.
	rubyGem(u, t, "fw-evil-2x", []string{"1.0.0", "1.0.1"}, old)
	rubyGem(u, t, "tdfw-evil-23a01ad3", []string{"1.0.1"}, old[:1])
	rubyGem(u, t, "fw-amb-5-x", []string{"1.0"}, old[:1])
	rubyGem(u, t, "fw-plat", []string{"1.0.0", "1.0.0-java"}, []time.Time{old[0], time.Now().Add(-10 * time.Minute)})
	cfg := fmt.Sprintf("firewall:\n  rubygems:\n    upstream: %q\n  private:\n    rubygems: [\"acme-*\"]\n", u.Srv.URL+"/rubygems")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall/rubygems"
	evil := fwReport(t, in, d, tok, "rubygems", "fw-evil-rb", "1.0.1")
	eventually(t, "the report in the index", func() bool {
		_, _, body := d.fwGet(fw+"/info/fw-evil-rb", tok)
		return !strings.Contains(string(body), "1.0.1")
	})

	t.Run("protocol", func(t *testing.T) {
		code, _, info := d.fwGet(fw+"/info/fw-evil-rb", tok)
		if code != 200 || strings.Count(string(info), "\n") != 2 {
			t.Fatalf("/info: %d %s", code, info)
		}
		code, _, versions := d.fwGet(fw+"/versions", tok)
		sum := md5.Sum(info)
		if code != 200 || !strings.Contains(string(versions), "\nfw-evil-rb 1.0.0 "+hex.EncodeToString(sum[:])+"\n") {
			t.Fatalf("/versions does not carry the served /info's checksum %x: %d\n%s", sum, code, versions)
		}
		for _, p := range []string{"/gems/fw-evil-rb-1.0.1.gem", "/quick/Marshal.4.8/fw-evil-rb-1.0.1.gemspec.rz"} {
			code, _, body := d.fwGet(fw+p, tok)
			if code != 403 || !strings.Contains(string(body), "Blocked by threatd: rubygems fw-evil-rb@1.0.1 is malicious (threat_id_"+evil) {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
		if code, _, body := d.fwGet(fw+"/info/acme-internal", tok); code != 404 || !strings.Contains(string(body), "firewall.rubygems.private_upstream") {
			t.Errorf("private name: %d %s", code, body)
		}
		if code, _, _ := d.fwGet(fw+"/names", tok); code != 200 {
			t.Errorf("/names: %d", code)
		}
		for _, p := range []string{"/info/..%2fversions", "/gems/%2e%2e.gem"} {
			if code, _, body := d.fwGet(fw+p, tok); code != 400 {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
	})

	t.Run("names and platforms", func(t *testing.T) {
		evil2x := fwReport(t, in, d, tok, "rubygems", "fw-evil-2x", "1.0.1")
		amb := fwReport(t, in, d, tok, "rubygems", "fw-amb-5-x", "1.0")
		eventually(t, "the reports in the index", func() bool {
			code, _, _ := d.fwGet(fw+"/gems/fw-amb-5-x-1.0.gem", tok)
			return code == 403
		})
		for p, want := range map[string]string{
			"/gems/fw-evil-2x-1.0.1.gem":                       "Blocked by threatd: rubygems fw-evil-2x@1.0.1 is malicious (threat_id_" + evil2x,
			"/quick/Marshal.4.8/fw-evil-2x-1.0.1.gemspec.rz":   "Blocked by threatd: rubygems fw-evil-2x@1.0.1 is malicious (threat_id_" + evil2x,
			"/gems/fw-amb-5-x-1.0.gem":                         "Blocked by threatd: rubygems fw-amb-5-x@1.0 is malicious (threat_id_" + amb,
			"/gems/fw-plat-1.0.0-java.gem":                     "Held by threatd: rubygems fw-plat@1.0.0-java was published 10m ago",
			"/quick/Marshal.4.8/fw-plat-1.0.0-java.gemspec.rz": "Held by threatd: rubygems fw-plat@1.0.0-java was published 10m ago",
		} {
			if code, _, body := d.fwGet(fw+p, tok); code != 403 || !strings.Contains(apitest.TenMinutes(string(body)), want) {
				t.Errorf("%s: %d %s, want 403 %q", p, code, body, want)
			}
		}
		for _, p := range []string{"/gems/fw-evil-2x-1.0.0.gem", "/gems/tdfw-evil-23a01ad3-1.0.1.gem", "/gems/fw-plat-1.0.0.gem"} {
			if code, _, body := d.fwGet(fw+p, tok); code != 200 || len(body) < 100 {
				t.Errorf("%s: %d %.200s", p, code, body)
			}
		}
		if code, _, body := d.fwGet(fw+"/gems/fw-nothing-5-x-1.0.gem", tok); code != 404 || !strings.Contains(string(body), "none of them lists it") {
			t.Errorf("a file no gem lists: %d %s", code, body)
		}
		// /versions agrees with /info: the version held (a platform's and
		// fw-fresh-rb's 1.1.0) and the reported ones are left out of both,
		// and the checksum of every line of their gems is the served
		// /info's.
		_, _, versions := d.fwGet(fw+"/versions", tok)
		for _, g := range []struct{ name, want, gone string }{
			{"fw-plat", "1.0.0", "1.0.0-java"}, {"fw-fresh-rb", "1.0.0", "1.1.0"}, {"fw-evil-2x", "1.0.0", "1.0.1"},
		} {
			code, _, info := d.fwGet(fw+"/info/"+g.name, tok)
			sum := md5.Sum(info)
			if code != 200 || strings.Contains(string(info), "\n"+g.gone+" ") || !strings.Contains(string(info), "\n"+g.want+" ") {
				t.Errorf("/info/%s: %d\n%s", g.name, code, info)
			}
			line := "\n" + g.name + " " + g.want + " " + hex.EncodeToString(sum[:]) + "\n"
			if !strings.Contains(string(versions), line) {
				t.Errorf("/versions lacks %q:\n%s", line, versions)
			}
		}
	})

	t.Run("bundler and gem", func(t *testing.T) {
		dir, env := bundleProject(t, in, d, tok, "fw-clean-rb >= 0", "fw-evil-rb >= 0", "fw-fresh-rb >= 0", "fw-evil-2x >= 0", "fw-plat >= 0", "tdfw-evil-23a01ad3 >= 0")
		out, ok := client(t, dir, env, bundle, "install")
		if !ok {
			t.Fatalf("bundle install of clean versions:\n%s", out)
		}
		lock := readFile(t, filepath.Join(dir, "Gemfile.lock"))
		for _, want := range []string{"fw-clean-rb (1.0.0)", "fw-evil-rb (1.0.0)", "fw-fresh-rb (1.0.0)", "fw-evil-2x (1.0.0)", "fw-plat (1.0.0)", "tdfw-evil-23a01ad3 (1.0.1)"} {
			if !strings.Contains(lock, want) {
				t.Errorf("Gemfile.lock lacks %s:\n%s", want, lock)
			}
		}
		// A Gemfile.lock that pins the reported version fails.
		pinned := strings.Replace(lock, "fw-evil-rb (1.0.0)", "fw-evil-rb (1.0.1)", 1)
		dir2, env2 := bundleProject(t, in, d, tok, "fw-clean-rb >= 0", "fw-evil-rb >= 0", "fw-fresh-rb >= 0", "fw-evil-2x >= 0", "fw-plat >= 0", "tdfw-evil-23a01ad3 >= 0")
		if err := os.WriteFile(filepath.Join(dir2, "Gemfile.lock"), []byte(pinned), 0o644); err != nil {
			t.Fatal(err)
		}
		out, ok = client(t, dir2, append(env2, "BUNDLE_FROZEN=true"), bundle, "install")
		if ok || !strings.Contains(out, "fw-evil-rb") {
			t.Fatalf("bundle install of a Gemfile.lock that pins the reported version:\n%s", out)
		}
		t.Logf("bundle install of the pinned lockfile:\n%s", out)
		// gem install: the clean gem installs, the reported version and
		// the one published now are not found.
		src := "https://threatd:" + tok + "@" + strings.TrimPrefix(d.base, "https://") + fw + "/"
		gemEnv := append(env, "GEM_HOME="+t.TempDir())
		if out, ok := client(t, dir, gemEnv, gem, "install", "--clear-sources", "--source", src, "--no-document", "fw-evil-rb"); !ok || !strings.Contains(out, "fw-evil-rb-1.0.0") {
			t.Fatalf("gem install fw-evil-rb:\n%s", out)
		}
		out, ok = client(t, dir, gemEnv, gem, "install", "--clear-sources", "--source", src, "--no-document", "fw-fresh-rb", "-v", "1.1.0")
		if ok {
			t.Fatalf("gem install of a version published now:\n%s", out)
		}
		t.Logf("gem install of a held version:\n%s", out)
		code, _, body := d.fwGet(fw+"/gems/fw-fresh-rb-1.1.0.gem", tok)
		if code != 403 || !strings.Contains(apitest.TenMinutes(string(body)), "Held by threatd: rubygems fw-fresh-rb@1.1.0 was published 10m ago") {
			t.Fatalf("held .gem: %d %s", code, body)
		}
		in.mustCLI("review", "reject", evil, "--note", "false positive")
		eventually(t, "fw-evil-rb 1.0.1 unblocked", func() bool {
			code, _, _ := d.fwGet(fw+"/gems/fw-evil-rb-1.0.1.gem", tok)
			return code == 200
		})
		if out, ok = client(t, dir2, append(env2, "BUNDLE_FROZEN=true"), bundle, "install"); !ok {
			t.Fatalf("after the withdrawal, bundle install of the pinned lockfile:\n%s", out)
		}
	})
}
