package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// TestFirewallComposer: the real composer (Debian's) requires packages
// through the firewall's Composer repository and resolves past a
// reported version; the dists come through the firewall and into its
// ledger (a report verified later names who got one); a composer.lock
// that pins the reported version fails at install with the refusal.
func TestFirewallComposer(t *testing.T) {
	t.Parallel()
	composer := needTool(t, "composer")
	u := fakeregistry.New(t)
	u.ComposerPackage(t, "acme/lib", []string{"1.0.0", "1.0.1", "1.0.2"}, fakeregistry.OldTimes(3))
	u.ComposerPackage(t, "acme/other", []string{"1.0.0"}, fakeregistry.OldTimes(1))
	cfg := fmt.Sprintf("firewall:\n  composer:\n    upstream: %q\n    file_hosts: [%q]\n", u.Srv.URL+"/composer", u.Srv.URL)
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	admin := in.user("adm@example.com", "--role", "admin")
	d := in.serve()
	repo := d.base + base + "/firewall/composer"
	evil := fwReport(t, in, d, tok, "packagist", "acme/lib", "1.0.2")
	eventually(t, "the report in the index", func() bool {
		_, _, body := d.fwGet(base+"/firewall/composer/p2/acme/lib.json", tok)
		return strings.Contains(string(body), `"1.0.1"`) && !strings.Contains(string(body), `"1.0.2"`)
	})

	proj, home := t.TempDir(), t.TempDir()
	manifest, _ := json.Marshal(map[string]any{"name": "shop/app", "require": map[string]any{},
		"repositories": []any{map[string]any{"type": "composer", "url": repo}, map[string]any{"packagist.org": false}},
		"config":       map[string]any{"cafile": in.certFile()}})
	host := strings.TrimPrefix(d.base, "https://") // Composer keys credentials by host:port
	auth, _ := json.Marshal(map[string]any{"http-basic": map[string]any{host: map[string]any{"username": "token", "password": tok}}})
	for name, body := range map[string][]byte{"composer.json": manifest, "auth.json": auth} {
		if err := os.WriteFile(filepath.Join(proj, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + home, "COMPOSER_HOME=" + filepath.Join(home, "composer"), "COMPOSER_CACHE_DIR=" + filepath.Join(home, "cache"),
		"COMPOSER_NO_INTERACTION=1", "COMPOSER_ALLOW_SUPERUSER=1", "COLUMNS=400"}
	out, ok := client(t, proj, env, composer, "require", "--no-progress", "acme/lib", "acme/other")
	if !ok {
		t.Fatalf("composer require:\n%s", out)
	}
	lib, _ := os.ReadFile(filepath.Join(proj, "vendor", "acme", "lib", "src", "Lib.php"))
	if !strings.Contains(string(lib), `"1.0.1"`) {
		t.Fatalf("installed:\n%s\n%s", lib, out)
	}
	lock, err := os.ReadFile(filepath.Join(proj, "composer.lock"))
	if err != nil || !strings.Contains(string(lock), `"version": "1.0.1"`) || !strings.Contains(string(lock), repo+"/dist/acme/lib/1.0.1") {
		t.Fatalf("composer.lock (its dist through the firewall):\n%s", lock)
	}
	if u.HitsOf("/composer/p2/acme/lib.json") == 0 {
		t.Fatal("the upstream's p2 document was never fetched")
	}
	// A lockfile that pins the reported version: install fails with the
	// refusal, and installs nothing.
	pinned := strings.ReplaceAll(strings.ReplaceAll(string(lock), `"version": "1.0.1"`, `"version": "1.0.2"`), "/dist/acme/lib/1.0.1", "/dist/acme/lib/1.0.2")
	if err := os.WriteFile(filepath.Join(proj, "composer.lock"), []byte(pinned), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(filepath.Join(proj, "vendor"))
	_ = os.RemoveAll(filepath.Join(home, "cache"))
	out, ok = client(t, proj, env, composer, "install", "--no-progress")
	if ok || !strings.Contains(out, "403") || !strings.Contains(out, "Blocked by threatd") || !strings.Contains(out, evil) {
		t.Fatalf("composer install of a lock pinning the reported version (ok %v):\n%s", ok, out)
	}
	if _, err := os.Stat(filepath.Join(proj, "vendor", "acme", "lib", "src", "Lib.php")); err == nil {
		t.Fatal("the reported version was installed")
	}
	t.Logf("composer's refusal:\n%s", out)
	// Exposure: a report verified after the install names who got it.
	other := fwReport(t, in, d, admin, "packagist", "acme/other", "")
	d.soleExposure(t, "the exposure of what composer installed", admin, other, func(e map[string]any) bool {
		return e["purl"] == "pkg:composer/acme/other@1.0.0" && e["user"] == "dev@example.com" && e["kind"] == "served"
	})
}

// TestFirewallComposerBranches: the quarantine reads a branch's time in
// ~dev.json as it reads a release's: a branch pushed to long ago is
// listed and its dist served, one pushed to minutes ago is left out of
// ~dev.json and its dist held (rule quarantine).
func TestFirewallComposerBranches(t *testing.T) {
	t.Parallel()
	u := fakeregistry.New(t)
	u.ComposerPackage(t, "acme/branchy", []string{"1.0.0"}, fakeregistry.OldTimes(1))
	old := fakeregistry.OldTimes(1)[0].UTC().Format("2006-01-02T15:04:05+00:00")
	fresh := time.Now().Add(-5 * time.Minute).UTC().Format("2006-01-02T15:04:05+00:00")
	dev := fmt.Sprintf(`{"packages":{"acme/branchy":[`+
		`{"name":"acme/branchy","version":"dev-main","version_normalized":"dev-main","time":%q,"dist":{"type":"zip","url":%q,"reference":"a1","shasum":""}},`+
		`{"version":"dev-hotfix","version_normalized":"dev-hotfix","time":%q,"dist":{"type":"zip","url":%q,"reference":"b2","shasum":""}}]},"minified":"composer/2.0"}`,
		old, u.Srv.URL+"/composer-dist/acme/branchy/main.zip", fresh, u.Srv.URL+"/composer-dist/acme/branchy/hotfix.zip")
	u.Put("/composer/p2/acme/branchy~dev.json", "application/json", 300, []byte(dev))
	u.Put("/composer-dist/acme/branchy/main.zip", "application/zip", 300, fakeregistry.ComposerZip(t, "acme/branchy", "dev-main"))
	u.Put("/composer-dist/acme/branchy/hotfix.zip", "application/zip", 300, fakeregistry.ComposerZip(t, "acme/branchy", "dev-hotfix"))
	in := newInstance(t, quiet+fmt.Sprintf("firewall:\n  composer:\n    upstream: %q\n    file_hosts: [%q]\n", u.Srv.URL+"/composer", u.Srv.URL))
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall/composer"
	code, _, body := d.fwGet(fw+"/p2/acme/branchy~dev.json", tok)
	if code != 200 || !strings.Contains(string(body), `"dev-main"`) || strings.Contains(string(body), "dev-hotfix") {
		t.Fatalf("~dev.json: %d %s", code, body)
	}
	if code, _, body := d.fwGet(fw+"/dist/acme/branchy/dev-main", tok); code != 200 || !strings.HasPrefix(string(body), "PK") {
		t.Fatalf("the old branch's dist: %d %.200s", code, body)
	}
	if code, _, body := d.fwGet(fw+"/dist/acme/branchy/dev-hotfix", tok); code != 403 || !strings.Contains(string(body), `"rule":"quarantine"`) {
		t.Fatalf("the fresh branch's dist: %d %s", code, body)
	}
}
