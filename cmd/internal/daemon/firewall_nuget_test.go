package daemon_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/fakeregistry"
	"github.com/threatd/threatd/core"
)

// TestFirewallNuGet checks the NuGet v3 firewall at the HTTP level (no
// NuGet client runs here) against documents shaped as api.nuget.org and
// BaGet serve them, whatever URLs their service index names: the service
// index points metadata and content back through the firewall; the flat
// container list and every registration hive lose a reported version,
// whatever the id's case, and a held one; its .nupkg is 403 with the
// threat named; a version published now, or pushed unlisted (published
// 1900), is held; a withdrawal unblocks; a private id without a private
// upstream is never fetched.
func TestFirewallNuGet(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		layout fakeregistry.NuGetLayout
	}{{"api.nuget.org", fakeregistry.NuGetOrg}, {"BaGet", fakeregistry.BaGet}} {
		t.Run(c.name, func(t *testing.T) { testFirewallNuGet(t, c.layout) })
	}
}

func testFirewallNuGet(t *testing.T, l fakeregistry.NuGetLayout) {
	u := fakeregistry.New(t)
	u.NuGetServiceIndex(l)
	old := fakeregistry.OldTimes(2)
	now := time.Now().Add(-10 * time.Minute)
	u.NuGetPackage(t, l, "FW.Evil", []string{"1.0.0", "1.0.1"}, old)
	u.NuGetPackage(t, l, "FW.Fresh", []string{"1.0.0", "1.1.0"}, []time.Time{old[0], now})
	u.NuGetPackage(t, l, "FW.Unlisted", []string{"1.0.0", "2.0.0"}, []time.Time{old[0], now}, "2.0.0")
	u.NuGetPackage(t, l, "Acme.Internal", []string{"9.9.9"}, old[:1])
	cfg := fmt.Sprintf("firewall:\n  nuget:\n    upstream: %q\n  private:\n    nuget: [\"acme.*\"]\n", u.Srv.URL+l.Index)
	d := start(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := d.user("dev@example.com")
	fw := base + "/firewall/nuget"
	flat, semver1, semver2 := fw+"/res/PackageBaseAddress_3.0.0/", fw+"/res/RegistrationsBaseUrl/", fw+"/res/RegistrationsBaseUrl_3.6.0/"
	evil := d.fwReport(tok, "nuget", "fw.evil", "1.0.1")
	eventually(t, "the report in the index", func() bool {
		_, _, body := d.fwGet(flat+"fw.evil/index.json", tok)
		return string(body) == `{"versions":["1.0.0"]}`
	})

	t.Run("service index", func(t *testing.T) {
		code, _, body := d.fwGet(fw+"/v3/index.json", tok)
		var idx struct {
			Version   string
			Resources []map[string]string
		}
		if code != 200 || json.Unmarshal(body, &idx) != nil || idx.Version != "3.0.0" || len(idx.Resources) != 4 {
			t.Fatalf("service index: %d %s", code, body)
		}
		want := map[string]string{
			"SearchQueryService":         "https://azuresearch-usnc.nuget.org/query",
			"PackageBaseAddress/3.0.0":   d.base + flat,
			"RegistrationsBaseUrl":       d.base + semver1,
			"RegistrationsBaseUrl/3.6.0": d.base + semver2,
		}
		for _, r := range idx.Resources {
			if want[r["@type"]] != r["@id"] {
				t.Errorf("%s: %s, want %s", r["@type"], r["@id"], want[r["@type"]])
			}
		}
	})

	t.Run("versions and files", func(t *testing.T) {
		for _, p := range []string{flat + "fw.evil/index.json", flat + "FW.Evil/index.json"} {
			if code, _, body := d.fwGet(p, tok); code != 200 || string(body) != `{"versions":["1.0.0"]}` {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
		for _, p := range []string{flat + "fw.evil/1.0.1/fw.evil.1.0.1.nupkg", flat + "fw.evil/1.0.1/fw.evil.nuspec", semver2 + "fw.evil/1.0.1.json", semver1 + "FW.Evil/1.0.1.json"} {
			code, _, body := d.fwGet(p, tok)
			if code != 403 || !strings.Contains(string(body), "Blocked by threatd: nuget fw.evil@1.0.1 is malicious (threat_id_"+evil) || !strings.Contains(string(body), `"rule":"malicious"`) {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
		if code, _, body := d.fwGet(flat+"fw.evil/1.0.0/fw.evil.1.0.0.nupkg", tok); code != 200 || string(body) != "PK nupkg FW.Evil 1.0.0" {
			t.Errorf("clean .nupkg: %d %s", code, body)
		}
		if l.Flat == fakeregistry.NuGetOrg.Flat {
			// The api.nuget.org paths the firewall served before still
			// answer (clients keep a service index for a while).
			if code, _, body := d.fwGet(fw+"/v3-flatcontainer/fw.evil/index.json", tok); code != 200 || string(body) != `{"versions":["1.0.0"]}` {
				t.Errorf("the flat container by its old path: %d %s", code, body)
			}
			if code, _, body := d.fwGet(fw+"/v3/registration5-gz-semver2/fw.evil/1.0.1.json", tok); code != 403 {
				t.Errorf("a leaf by its old path: %d %s", code, body)
			}
		}
		for _, hive := range []string{semver1, semver2} {
			code, _, body := d.fwGet(hive+"fw.evil/index.json", tok)
			var reg struct {
				Count int
				Items []struct {
					Count int
					Items []struct {
						CatalogEntry   struct{ Version string }
						PackageContent string
					}
				}
			}
			if code != 200 || json.Unmarshal(body, &reg) != nil || reg.Count != 1 || len(reg.Items) != 1 || reg.Items[0].Count != 1 || len(reg.Items[0].Items) != 1 ||
				reg.Items[0].Items[0].CatalogEntry.Version != "1.0.0" || reg.Items[0].Items[0].PackageContent != d.base+flat+"fw.evil/1.0.0/fw.evil.1.0.0.nupkg" {
				t.Fatalf("registration index %s: %d %s", hive, code, body)
			}
			if strings.Contains(string(body), u.Srv.URL+l.Flat) || strings.Contains(string(body), u.Srv.URL+l.Hives["RegistrationsBaseUrl"]) {
				t.Errorf("registration index %s links to the upstream's resources: %s", hive, body)
			}
		}
		for _, p := range []string{flat + "fw.evil/%2e%2e/x.nupkg", flat + "fw%2fevil/index.json", fw + "/res/PackageBaseAddress_3.0.0/..%2fx/index.json"} {
			if code, _, body := d.fwGet(p, tok); code != 400 {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
		if code, _, body := d.fwGet(fw+"/res/RegistrationsBaseUrl_3.0.0-rc/fw.evil/index.json", tok); code != 404 || !strings.Contains(string(body), "names no resource of type RegistrationsBaseUrl/3.0.0-rc") {
			t.Errorf("a resource the service index does not name: %d %s", code, body)
		}
	})

	t.Run("quarantine, private, withdrawal", func(t *testing.T) {
		// Held in every listing: the flat container and both hives.
		if code, _, body := d.fwGet(flat+"fw.fresh/index.json", tok); code != 200 || string(body) != `{"versions":["1.0.0"]}` {
			t.Errorf("fresh list: %d %s", code, body)
		}
		for _, hive := range []string{semver1, semver2} {
			if code, _, body := d.fwGet(hive+"fw.fresh/index.json", tok); code != 200 || strings.Contains(string(body), `"version":"1.1.0"`) || !strings.Contains(string(body), `"version":"1.0.0"`) {
				t.Errorf("fresh registration %s: %d %s", hive, code, body)
			}
		}
		code, _, body := d.fwGet(flat+"fw.fresh/1.1.0/fw.fresh.1.1.0.nupkg", tok)
		if code != 403 || !strings.Contains(apitest.TenMinutes(string(body)), "Held by threatd: nuget fw.fresh@1.1.0 was published 10m ago") {
			t.Errorf("held .nupkg: %d %s", code, body)
		}
		// Pushed unlisted: "published 1900" is no publish time; it is
		// held from when the firewall first saw it.
		if code, _, body := d.fwGet(flat+"fw.unlisted/index.json", tok); code != 200 || string(body) != `{"versions":["1.0.0"]}` {
			t.Errorf("unlisted list: %d %s", code, body)
		}
		code, _, body = d.fwGet(flat+"fw.unlisted/2.0.0/fw.unlisted.2.0.0.nupkg", tok)
		if code != 403 || !strings.Contains(string(body), "Held by threatd: nuget fw.unlisted@2.0.0 has no publish time and was first seen") {
			t.Errorf("unlisted .nupkg: %d %s", code, body)
		}
		code, _, body = d.fwGet(flat+"acme.internal/index.json", tok)
		if code != 404 || !strings.Contains(string(body), "firewall.nuget.private_upstream") {
			t.Errorf("private id: %d %s", code, body)
		}
		d.review(core.DecisionReject, 1, "false positive", "", evil)
		eventually(t, "fw.evil 1.0.1 unblocked", func() bool {
			code, _, _ := d.fwGet(flat+"fw.evil/1.0.1/fw.evil.1.0.1.nupkg", tok)
			return code == 200
		})
		if _, _, body := d.fwGet(flat+"fw.evil/index.json", tok); string(body) != `{"versions":["1.0.0","1.0.1"]}` {
			t.Errorf("after the withdrawal: %s", body)
		}
	})
}
