package main_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// nugetLayout is where a NuGet server keeps its resources, below the
// upstream's root: its service index, its flat container
// (PackageBaseAddress) and its registration hives by @type (a hive whose
// path holds "-gz" is served gzip-encoded, as api.nuget.org's are).
type nugetLayout struct {
	index, flat string
	hives       map[string]string
}

// api.nuget.org's layout, and BaGet's (its flat container under
// v3/package/, its registrations under v3/registration/), with a gzip
// SemVer 2 hive on another path.
var (
	nugetOrg = nugetLayout{index: "/v3/index.json", flat: "/v3-flatcontainer/", hives: map[string]string{
		"RegistrationsBaseUrl": "/v3/registration5-semver1/", "RegistrationsBaseUrl/3.6.0": "/v3/registration5-gz-semver2/"}}
	baget = nugetLayout{index: "/baget/v3/index.json", flat: "/baget/v3/package/", hives: map[string]string{
		"RegistrationsBaseUrl": "/baget/v3/registration/", "RegistrationsBaseUrl/3.6.0": "/baget/hives/semver2-gz/"}}
)

// nugetServiceIndex is u's service index of layout l (the resources a
// client reads, search on another host).
func (u *upstreamRegistry) nugetServiceIndex(l nugetLayout) {
	root := u.srv.URL
	resources := []map[string]string{
		{"@id": "https://azuresearch-usnc.nuget.org/query", "@type": "SearchQueryService", "comment": "Query endpoint of NuGet Search service (primary)"},
		{"@id": root + l.flat, "@type": "PackageBaseAddress/3.0.0", "comment": "Base URL of where NuGet packages are stored"},
	}
	for _, typ := range []string{"RegistrationsBaseUrl", "RegistrationsBaseUrl/3.6.0"} {
		resources = append(resources, map[string]string{"@id": root + l.hives[typ], "@type": typ, "comment": "Base URL of where NuGet package registration info is stored"})
	}
	idx, _ := json.Marshal(map[string]any{"version": "3.0.0", "resources": resources,
		"@context": map[string]string{"@vocab": "http://schema.nuget.org/services#", "comment": "http://www.w3.org/2000/01/rdf-schema#comment"}})
	u.put(l.index, "application/json", 60, idx)
}

// nugetPackage publishes id's versions in layout l as the server does:
// the flat container's version list, .nupkg and .nuspec; in every hive, a
// registration index with one inlined page, and a leaf per version. A
// version in unlisted is pushed unlisted: published 1900-01-01, listed
// false, as nuget.org shows it.
func (u *upstreamRegistry) nugetPackage(t *testing.T, l nugetLayout, id string, versions []string, at []time.Time, unlisted ...string) {
	t.Helper()
	root, lower := u.srv.URL, strings.ToLower(id)
	list, _ := json.Marshal(map[string][]string{"versions": versions})
	u.put(l.flat+lower+"/index.json", "application/json", 60, list)
	for _, v := range versions {
		u.put(l.flat+lower+"/"+v+"/"+lower+"."+v+".nupkg", "application/octet-stream", 31536000, []byte("PK nupkg "+id+" "+v))
		u.put(l.flat+lower+"/"+v+"/"+lower+".nuspec", "application/xml", 31536000, []byte("<package><metadata><id>"+id+"</id><version>"+v+"</version></metadata></package>"))
	}
	for _, hivePath := range l.hives {
		hive := root + hivePath + lower
		var leaves []map[string]any
		for i, v := range versions {
			published, listed := at[i].UTC().Format("2006-01-02T15:04:05.000Z07:00"), true
			for _, un := range unlisted {
				if un == v {
					published, listed = "1900-01-01T00:00:00+00:00", false
				}
			}
			content := root + l.flat + lower + "/" + v + "/" + lower + "." + v + ".nupkg"
			leaf := map[string]any{
				"@id": hive + "/" + v + ".json", "@type": "Package", "commitId": "b9c1a7f0-0000-0000-0000-000000000000", "commitTimeStamp": published,
				"catalogEntry": map[string]any{"@id": root + "/v3/catalog0/data/2026.01.01.00.00.00/" + lower + "." + v + ".json", "@type": "PackageDetails",
					"authors": "threatd", "id": id, "listed": listed, "published": published, "version": v, "packageContent": content},
				"packageContent": content,
				"registration":   hive + "/index.json",
			}
			leaves = append(leaves, leaf)
			body, _ := json.Marshal(map[string]any{"@id": hive + "/" + v + ".json", "catalogEntry": leaf["catalogEntry"].(map[string]any)["@id"], "listed": listed,
				"packageContent": content, "published": published, "registration": hive + "/index.json"})
			u.putHive(hivePath+lower+"/"+v+".json", body)
		}
		index, _ := json.Marshal(map[string]any{"@id": hive + "/index.json", "@type": []string{"catalog:CatalogRoot", "PackageRegistration"}, "count": 1,
			"items": []any{map[string]any{"@id": hive + "/index.json#page/" + versions[0] + "/" + versions[len(versions)-1], "@type": "catalog:CatalogPage",
				"count": len(leaves), "items": leaves, "lower": versions[0], "upper": versions[len(versions)-1], "parent": hive + "/index.json"}}})
		u.putHive(hivePath+lower+"/index.json", index)
	}
}

// putHive serves a registration document, gzip-encoded in a gzip hive.
func (u *upstreamRegistry) putHive(p string, body []byte) {
	if !strings.Contains(p, "-gz") {
		u.put(p, "application/json", 60, body)
		return
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(body)
	_ = zw.Close()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.files[p] = servedFile{body: buf.Bytes(), contentType: "application/json", maxAge: 60, header: map[string]string{"Content-Encoding": "gzip"}}
}

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
		layout nugetLayout
	}{{"api.nuget.org", nugetOrg}, {"BaGet", baget}} {
		t.Run(c.name, func(t *testing.T) { testFirewallNuGet(t, c.layout) })
	}
}

func testFirewallNuGet(t *testing.T, l nugetLayout) {
	u := newUpstreamRegistry(t)
	u.nugetServiceIndex(l)
	old := oldTimes(2)
	now := time.Now().Add(-10 * time.Minute)
	u.nugetPackage(t, l, "FW.Evil", []string{"1.0.0", "1.0.1"}, old)
	u.nugetPackage(t, l, "FW.Fresh", []string{"1.0.0", "1.1.0"}, []time.Time{old[0], now})
	u.nugetPackage(t, l, "FW.Unlisted", []string{"1.0.0", "2.0.0"}, []time.Time{old[0], now}, "2.0.0")
	u.nugetPackage(t, l, "Acme.Internal", []string{"9.9.9"}, old[:1])
	cfg := fmt.Sprintf("firewall:\n  nuget:\n    upstream: %q\n  private:\n    nuget: [\"acme.*\"]\n", u.srv.URL+l.index)
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall/nuget"
	flat, semver1, semver2 := fw+"/res/PackageBaseAddress_3.0.0/", fw+"/res/RegistrationsBaseUrl/", fw+"/res/RegistrationsBaseUrl_3.6.0/"
	evil := fwReport(t, in, d, tok, "nuget", "fw.evil", "1.0.1")
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
		if l.flat == nugetOrg.flat {
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
			if strings.Contains(string(body), u.srv.URL+l.flat) || strings.Contains(string(body), u.srv.URL+l.hives["RegistrationsBaseUrl"]) {
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
		if code != 403 || !strings.Contains(string(body), "Held by threatd: nuget fw.fresh@1.1.0 was published 10m ago") {
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
		in.mustCLI("review", "reject", evil, "--note", "false positive")
		eventually(t, "fw.evil 1.0.1 unblocked", func() bool {
			code, _, _ := d.fwGet(flat+"fw.evil/1.0.1/fw.evil.1.0.1.nupkg", tok)
			return code == 200
		})
		if _, _, body := d.fwGet(flat+"fw.evil/index.json", tok); string(body) != `{"versions":["1.0.0","1.0.1"]}` {
			t.Errorf("after the withdrawal: %s", body)
		}
	})
}
