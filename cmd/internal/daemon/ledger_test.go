package daemon_test

import (
	"fmt"
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
