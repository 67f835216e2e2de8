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

// nugetServiceIndex is u's service index as api.nuget.org writes it (the
// resources a client reads, search on another host).
func (u *upstreamRegistry) nugetServiceIndex() {
	root := u.srv.URL
	idx := fmt.Sprintf(`{
  "version": "3.0.0",
  "resources": [
    {"@id": "https://azuresearch-usnc.nuget.org/query", "@type": "SearchQueryService", "comment": "Query endpoint of NuGet Search service (primary)"},
    {"@id": "%[1]s/v3-flatcontainer/", "@type": "PackageBaseAddress/3.0.0", "comment": "Base URL of where NuGet packages are stored, in the format https://api.nuget.org/v3-flatcontainer/{id-lower}/{version-lower}/{id-lower}.{version-lower}.nupkg"},
    {"@id": "%[1]s/v3/registration5-semver1/", "@type": "RegistrationsBaseUrl", "comment": "Base URL of Azure storage where NuGet package registration info is stored"},
    {"@id": "%[1]s/v3/registration5-gz-semver2/", "@type": "RegistrationsBaseUrl/3.6.0", "comment": "Base URL of Azure storage where NuGet package registration info is stored in GZIP format. This base URL includes SemVer 2.0.0 packages."}
  ],
  "@context": {"@vocab": "http://schema.nuget.org/services#", "comment": "http://www.w3.org/2000/01/rdf-schema#comment"}
}`, root)
	u.put("/v3/index.json", "application/json", 60, []byte(idx))
}

// nugetPackage publishes id's versions as api.nuget.org does: the flat
// container's version list, .nupkg and .nuspec; a registration index with
// one inlined page, and a leaf per version, in the gzip hive (served
// gzip-encoded).
func (u *upstreamRegistry) nugetPackage(t *testing.T, id string, versions []string, at []time.Time) {
	t.Helper()
	root, lower := u.srv.URL, strings.ToLower(id)
	list, _ := json.Marshal(map[string][]string{"versions": versions})
	u.put("/v3-flatcontainer/"+lower+"/index.json", "application/json", 60, list)
	hive := root + "/v3/registration5-gz-semver2/" + lower
	var leaves []map[string]any
	for i, v := range versions {
		u.put("/v3-flatcontainer/"+lower+"/"+v+"/"+lower+"."+v+".nupkg", "application/octet-stream", 31536000, []byte("PK nupkg "+id+" "+v))
		u.put("/v3-flatcontainer/"+lower+"/"+v+"/"+lower+".nuspec", "application/xml", 31536000, []byte("<package><metadata><id>"+id+"</id><version>"+v+"</version></metadata></package>"))
		published := at[i].UTC().Format("2006-01-02T15:04:05.000Z07:00")
		leaf := map[string]any{
			"@id": hive + "/" + v + ".json", "@type": "Package", "commitId": "b9c1a7f0-0000-0000-0000-000000000000", "commitTimeStamp": published,
			"catalogEntry": map[string]any{"@id": root + "/v3/catalog0/data/2026.01.01.00.00.00/" + lower + "." + v + ".json", "@type": "PackageDetails",
				"authors": "threatd", "id": id, "listed": true, "published": published, "version": v, "packageContent": root + "/v3-flatcontainer/" + lower + "/" + v + "/" + lower + "." + v + ".nupkg"},
			"packageContent": root + "/v3-flatcontainer/" + lower + "/" + v + "/" + lower + "." + v + ".nupkg",
			"registration":   hive + "/index.json",
		}
		leaves = append(leaves, leaf)
		body, _ := json.Marshal(map[string]any{"@id": hive + "/" + v + ".json", "catalogEntry": leaf["catalogEntry"].(map[string]any)["@id"], "listed": true,
			"packageContent": leaf["packageContent"], "published": published, "registration": hive + "/index.json"})
		u.putGzip("/v3/registration5-gz-semver2/"+lower+"/"+v+".json", body)
	}
	index, _ := json.Marshal(map[string]any{"@id": hive + "/index.json", "@type": []string{"catalog:CatalogRoot", "PackageRegistration"}, "count": 1,
		"items": []any{map[string]any{"@id": hive + "/index.json#page/" + versions[0] + "/" + versions[len(versions)-1], "@type": "catalog:CatalogPage",
			"count": len(leaves), "items": leaves, "lower": versions[0], "upper": versions[len(versions)-1], "parent": hive + "/index.json"}}})
	u.putGzip("/v3/registration5-gz-semver2/"+lower+"/index.json", index)
}

// putGzip serves body gzip-encoded, as the gzip registration hives are.
func (u *upstreamRegistry) putGzip(p string, body []byte) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(body)
	_ = zw.Close()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.files[p] = servedFile{body: buf.Bytes(), contentType: "application/json", maxAge: 60, header: map[string]string{"Content-Encoding": "gzip"}}
}

// TestFirewallNuGet checks the NuGet v3 firewall at the HTTP level (no
// NuGet client runs here) against documents shaped as api.nuget.org
// serves them: the service index points metadata and content back through
// the firewall; the flat container list and the registration index lose
// a reported version, whatever the id's case; its .nupkg is 403 with the
// threat named; a version published now is held; a withdrawal unblocks; a
// private id without a private upstream is never fetched.
func TestFirewallNuGet(t *testing.T) {
	u := newUpstreamRegistry(t)
	u.nugetServiceIndex()
	old := oldTimes(2)
	u.nugetPackage(t, "FW.Evil", []string{"1.0.0", "1.0.1"}, old)
	u.nugetPackage(t, "FW.Fresh", []string{"1.0.0", "1.1.0"}, []time.Time{old[0], time.Now().Add(-10 * time.Minute)})
	u.nugetPackage(t, "Acme.Internal", []string{"9.9.9"}, old[:1])
	cfg := fmt.Sprintf("firewall:\n  nuget:\n    upstream: %q\n  private:\n    nuget: [\"acme.*\"]\n", u.srv.URL+"/v3/index.json")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall/nuget"
	evil := fwReport(t, in, d, tok, "nuget", "fw.evil", "1.0.1")
	eventually(t, "the report in the index", func() bool {
		_, _, body := d.fwGet(fw+"/v3-flatcontainer/fw.evil/index.json", tok)
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
			"PackageBaseAddress/3.0.0":   d.base + fw + "/v3-flatcontainer/",
			"RegistrationsBaseUrl":       d.base + fw + "/v3/registration5-semver1/",
			"RegistrationsBaseUrl/3.6.0": d.base + fw + "/v3/registration5-gz-semver2/",
		}
		for _, r := range idx.Resources {
			if want[r["@type"]] != r["@id"] {
				t.Errorf("%s: %s, want %s", r["@type"], r["@id"], want[r["@type"]])
			}
		}
	})

	t.Run("versions and files", func(t *testing.T) {
		for _, p := range []string{"/v3-flatcontainer/fw.evil/index.json", "/v3-flatcontainer/FW.Evil/index.json"} {
			if code, _, body := d.fwGet(fw+p, tok); code != 200 || string(body) != `{"versions":["1.0.0"]}` {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
		for _, p := range []string{"/v3-flatcontainer/fw.evil/1.0.1/fw.evil.1.0.1.nupkg", "/v3-flatcontainer/fw.evil/1.0.1/fw.evil.nuspec", "/v3/registration5-gz-semver2/fw.evil/1.0.1.json"} {
			code, _, body := d.fwGet(fw+p, tok)
			if code != 403 || !strings.Contains(string(body), "Blocked by threatd: nuget fw.evil@1.0.1 is malicious (threat_id_"+evil) {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
		if code, _, body := d.fwGet(fw+"/v3-flatcontainer/fw.evil/1.0.0/fw.evil.1.0.0.nupkg", tok); code != 200 || string(body) != "PK nupkg FW.Evil 1.0.0" {
			t.Errorf("clean .nupkg: %d %s", code, body)
		}
		code, _, body := d.fwGet(fw+"/v3/registration5-gz-semver2/fw.evil/index.json", tok)
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
			reg.Items[0].Items[0].CatalogEntry.Version != "1.0.0" || reg.Items[0].Items[0].PackageContent != d.base+fw+"/v3-flatcontainer/fw.evil/1.0.0/fw.evil.1.0.0.nupkg" {
			t.Fatalf("registration index: %d %s", code, body)
		}
		for _, p := range []string{"/v3-flatcontainer/fw.evil/%2e%2e/x.nupkg", "/v3-flatcontainer/fw%2fevil/index.json"} {
			if code, _, body := d.fwGet(fw+p, tok); code != 400 {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
	})

	t.Run("quarantine, private, withdrawal", func(t *testing.T) {
		if code, _, body := d.fwGet(fw+"/v3-flatcontainer/fw.fresh/index.json", tok); code != 200 || string(body) != `{"versions":["1.0.0"]}` {
			t.Errorf("fresh list: %d %s", code, body)
		}
		code, _, body := d.fwGet(fw+"/v3-flatcontainer/fw.fresh/1.1.0/fw.fresh.1.1.0.nupkg", tok)
		if code != 403 || !strings.Contains(string(body), "Held by threatd: nuget fw.fresh@1.1.0 was published 10m ago") {
			t.Errorf("held .nupkg: %d %s", code, body)
		}
		code, _, body = d.fwGet(fw+"/v3-flatcontainer/acme.internal/index.json", tok)
		if code != 404 || !strings.Contains(string(body), "firewall.nuget.private_upstream") {
			t.Errorf("private id: %d %s", code, body)
		}
		in.mustCLI("review", "reject", evil, "--note", "false positive")
		eventually(t, "fw.evil 1.0.1 unblocked", func() bool {
			code, _, _ := d.fwGet(fw+"/v3-flatcontainer/fw.evil/1.0.1/fw.evil.1.0.1.nupkg", tok)
			return code == 200
		})
		if _, _, body := d.fwGet(fw+"/v3-flatcontainer/fw.evil/index.json", tok); string(body) != `{"versions":["1.0.0","1.0.1"]}` {
			t.Errorf("after the withdrawal: %s", body)
		}
	})
}
