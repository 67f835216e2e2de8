package daemon_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// TestExposure: the firewall's ledger and a project's inventory become
// exposures when a report verified later names the version: each token's
// row and the project, once; not the version nobody got; listed for
// administrators, and to each user their own; bad queries are 400 naming
// the parameter, an unknown report 404, a bad project name 400 with
// nothing kept.
func TestExposure(t *testing.T) {
	t.Parallel()
	u := fakeregistry.New(t)
	u.NPMPackage(t, "exp-pad", "1.0.1", "1.0.0", "1.0.1")
	d := start(t, quiet+"  new_user_max_unverified: 0\n"+fmt.Sprintf("firewall:\n  npm:\n    upstream: %q\n", u.Srv.URL))
	a1 := d.user("a@example.com")
	a2 := d.token("a@example.com")
	b := d.user("b@example.com")
	admin := d.user("admin@example.com", "--role", "admin")
	tgz := base + "/firewall/npm/exp-pad/-/exp-pad-"
	for _, get := range []struct{ tok, version string }{{a1, "1.0.1"}, {a1, "1.0.1"}, {a2, "1.0.1"}, {b, "1.0.0"}} {
		if code, _, _ := d.fwGet(tgz+get.version+".tgz", get.tok); code != 200 {
			t.Fatalf("%s: %d", get.version, code)
		}
	}
	lock := `{"name":"web","lockfileVersion":3,"packages":{"":{"name":"web"},"node_modules/exp-pad":{"version":"1.0.1"},"node_modules/other":{"version":"2.0.0"}}}`
	d.do("POST", base+"/scan?file=package-lock.json&project=web-app", b, lock).expect(t, 200, "")
	d.do("POST", base+"/scan?file=package-lock.json&project="+strings.Repeat("x", 201), b, lock).
		expect(t, 400, "project: must be a name of 1 to 200 characters without control characters")
	db := d.db()
	eventually(t, "the ledger written", func() bool { return count(t, db, "SELECT coalesce(sum(count), 0) FROM firewall_ledger") == 4 })
	if n := count(t, db, "SELECT count(*) FROM inventories"); n != 1 {
		t.Fatalf("%d inventories", n)
	}

	id := d.fwReport(admin, "npm", "exp-pad", "1.0.1")
	var r response
	eventually(t, "the exposures found", func() bool {
		r = d.do("GET", base+"/exposure?threat_id="+id, admin, "")
		return r.code == 200 && r.body["count"].(float64) == 3
	})
	seen := map[string]bool{}
	for _, x := range r.body["exposures"].([]any) {
		e := x.(map[string]any)
		key := fmt.Sprintf("%s %s %v", e["kind"], e["user"], e["count"])
		if e["kind"] == "inventory" {
			key += " " + e["project"].(string)
		}
		seen[key] = true
		if e["purl"] != "pkg:npm/exp-pad@1.0.1" || e["threat_id"] != id {
			t.Fatalf("exposure %v", e)
		}
	}
	for _, want := range []string{"served a@example.com 2", "served a@example.com 1", "inventory b@example.com 1 web-app"} {
		if !seen[want] {
			t.Fatalf("no %q among %v", want, seen)
		}
	}
	if n := len(d.do("GET", base+"/account/exposure", a1, "").expect(t, 200, "").body["exposures"].([]any)); n != 2 {
		t.Fatalf("a sees %d", n)
	}
	if got := d.do("GET", base+"/account/exposure", b, "").expect(t, 200, "").body["exposures"].([]any); len(got) != 1 || got[0].(map[string]any)["kind"] != "inventory" {
		t.Fatalf("b sees %v", got)
	}
	page := d.do("GET", base+"/exposure?limit=2", admin, "").expect(t, 200, "")
	next, _ := page.body["next_cursor"].(string)
	if len(page.body["exposures"].([]any)) != 2 || next == "" {
		t.Fatalf("first page %v", page.body)
	}
	if last := d.do("GET", base+"/exposure?limit=2&cursor="+next, admin, "").expect(t, 200, ""); len(last.body["exposures"].([]any)) != 1 {
		t.Fatalf("second page %v", last.body)
	}
	d.do("GET", base+"/exposure", a1, "").expect(t, 403, "This endpoint needs a token of a user whose role is admin (yours is submitter)")
	d.do("GET", base+"/exposure?threat_id=01a21f7c-f05d-70a4-acb6-94561353d804", admin, "").expect(t, 404, "No report 01a21f7c-f05d-70a4-acb6-94561353d804")
	d.do("GET", base+"/exposure?cursor=x", admin, "").expect(t, 400, `cursor: is not a cursor this endpoint gave ("x"): use next_cursor as it is`)
	d.do("GET", base+"/exposure?limit=0", admin, "").expect(t, 400, `limit: must be a whole number from 1 to 1000 (got "0")`)
	d.do("GET", base+"/exposure?since=yesterday", admin, "").expect(t, 400, `since: must be an RFC 3339 time such as 2026-11-25T00:00:00Z (got "yesterday")`)
	// Found once: the feed's next changes, and a second look, add none.
	d.fwReport(admin, "npm", "other-pkg", "")
	if n := count(t, db, "SELECT count(*) FROM exposures"); n != 3 {
		t.Fatalf("%d exposures", n)
	}
}
