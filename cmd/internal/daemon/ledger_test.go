package daemon_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// TestLedger: each artifact the firewall serves is counted, one row per
// version, token, address and day, written in batches; a refused or
// missing artifact, and a document, are not counted; firewall.ledger_ip
// keeps the address, its network, or nothing.
func TestLedger(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ mode, ip string }{{"full", "127.0.0.1"}, {"truncated", "127.0.0.0/24"}, {"none", ""}} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			u := fakeregistry.New(t)
			u.NPMPackage(t, "ledger-pad", "1.0.1", "1.0.0", "1.0.1")
			d := start(t, quiet+"  new_user_max_unverified: 0\n"+fmt.Sprintf("firewall:\n  npm:\n    upstream: %q\n  ledger_ip: %s\n", u.Srv.URL, c.mode))
			a, b := d.user("a@example.com"), d.user("b@example.com")
			fw := base + "/firewall/npm/ledger-pad"
			d.fwReport(a, "npm", "ledger-pad", "1.0.1")
			eventually(t, "the report in the index", func() bool {
				_, _, body := d.fwGet(fw, a)
				return !strings.Contains(string(body), `"1.0.1":`)
			})
			if code, _, _ := d.fwGet(fw+"/-/ledger-pad-1.0.1.tgz", a); code != 403 {
				t.Fatalf("the reported version: %d", code)
			}
			for range 3 {
				if code, _, _ := d.fwGet(fw+"/-/ledger-pad-1.0.0.tgz", a); code != 200 {
					t.Fatalf("tarball: %d", code)
				}
			}
			d.fwGet(fw+"/-/ledger-pad-1.0.0.tgz", b)
			d.fwGet(fw, a)
			d.fwGet(fw+"/-/ledger-pad-9.9.9.tgz", a)
			db := d.db()
			eventually(t, "the ledger written", func() bool {
				return count(t, db, "SELECT coalesce(sum(count), 0) FROM firewall_ledger") == 4
			})
			var rows, tokens int
			var ip, purl, email string
			if err := db.QueryRow(`SELECT count(*), count(DISTINCT token_id), max(client_ip), max(purl), max(user_email) FROM firewall_ledger WHERE version = '1.0.0'`).Scan(&rows, &tokens, &ip, &purl, &email); err != nil {
				t.Fatal(err)
			}
			if rows != 2 || tokens != 2 || ip != c.ip || purl != "pkg:npm/ledger-pad@1.0.0" || email != "b@example.com" {
				t.Fatalf("ledger: %d rows, %d tokens, ip %q, purl %q, user %q", rows, tokens, ip, purl, email)
			}
			if n := count(t, db, "SELECT count(*) FROM firewall_ledger WHERE version <> '1.0.0'"); n != 0 {
				t.Fatalf("%d rows of versions not served", n)
			}
		})
	}
}

// TestLedgerEveryEcosystem: an artifact of each package registry the
// firewall serves is counted under its ecosystem, its name as the
// firewall folds it, its version and its purl.
func TestLedgerEveryEcosystem(t *testing.T) {
	t.Parallel()
	u := fakeregistry.New(t)
	old := fakeregistry.OldTimes(1)
	u.NPMPackage(t, "led-npm", "1.0.0", "1.0.0")
	u.PyPIProjectAt(t, "led-py", []string{"1.0"}, old)
	u.GoModuleAt(t, "example.com/ledmod", []string{"v1.0.0"}, old)
	u.MavenArtifact(t, "com.example", "led-jar", []string{"1.0.0"}, old)
	u.CargoCrate(t, "led_rs", []string{"1.0.0"}, old)
	u.NuGetServiceIndex(fakeregistry.NuGetOrg)
	u.NuGetPackage(t, fakeregistry.NuGetOrg, "Led.Pkg", []string{"1.0.0"}, old)
	d := start(t, quiet+"  new_user_max_unverified: 0\n"+fmt.Sprintf(`firewall:
  npm: {upstream: %q}
  pypi: {upstream: %q}
  go: {upstream: %q}
  maven: {upstream: %q}
  cargo: {upstream: %q}
  nuget: {upstream: %q}
`, u.Srv.URL, u.Srv.URL+"/simple", u.Srv.URL, u.Srv.URL+"/maven2", u.Srv.URL+"/cargo", u.Srv.URL+fakeregistry.NuGetOrg.Index))
	tok := d.user("dev@example.com")
	fw := base + "/firewall"
	// PyPI's file is where the firewall's simple page links it.
	_, _, page := d.fwGet(fw+"/pypi/simple/led-py/", tok)
	m := regexp.MustCompile(`href="([^"#]+)`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no file in the simple page:\n%s", page)
	}
	wheel, err := url.Parse(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	wheelPath := wheel.Path
	if !wheel.IsAbs() {
		wheelPath = (&url.URL{Path: fw + "/pypi/simple/led-py/"}).ResolveReference(wheel).Path
	}
	for _, p := range []string{fw + "/npm/led-npm/-/led-npm-1.0.0.tgz", wheelPath, fw + "/go/example.com/ledmod/@v/v1.0.0.zip",
		fw + "/maven/com/example/led-jar/1.0.0/led-jar-1.0.0.jar", fw + "/cargo/crates/led_rs/1.0.0/download",
		fw + "/nuget/res/PackageBaseAddress_3.0.0/led.pkg/1.0.0/led.pkg.1.0.0.nupkg"} {
		if code, _, body := d.fwGet(p, tok); code != 200 {
			t.Fatalf("%s: %d %s", p, code, body)
		}
	}
	db := d.db()
	eventually(t, "the ledger written", func() bool { return count(t, db, "SELECT count(*) FROM firewall_ledger") == 6 })
	rows, err := db.Query("SELECT ecosystem || ' ' || name || ' ' || version || ' ' || purl || ' ' || user_email || ' ' || count FROM firewall_ledger ORDER BY ecosystem")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []string{
		"cargo led-rs 1.0.0 pkg:cargo/led_rs@1.0.0 dev@example.com 1",
		"go example.com/ledmod v1.0.0 pkg:golang/example.com/ledmod@v1.0.0 dev@example.com 1",
		"maven com.example:led-jar 1.0.0 pkg:maven/com.example/led-jar@1.0.0 dev@example.com 1",
		"npm led-npm 1.0.0 pkg:npm/led-npm@1.0.0 dev@example.com 1",
		"nuget led.pkg 1.0.0 pkg:nuget/led.pkg@1.0.0 dev@example.com 1", // the flat container's lower-case id
		"pypi led-py 1.0 pkg:pypi/led-py@1.0 dev@example.com 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ledger:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
