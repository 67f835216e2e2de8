package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// fwPost POSTs a JSON body to the firewall with the token.
func (d *daemon) fwPost(path, token, body string) (int, []byte) {
	d.t.Helper()
	req, _ := http.NewRequest("POST", d.base+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json;api-version=3.0-preview.1")
	res, err := d.client.Do(req)
	if err != nil {
		d.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// galleryQuery is VS Code's query of extensions by id (filter 7), every
// version with files and asset URIs.
func galleryQuery(ids ...string) string {
	var cs []string
	for _, id := range ids {
		cs = append(cs, fmt.Sprintf(`{"filterType":7,"value":%q}`, id))
	}
	return `{"filters":[{"criteria":[{"filterType":8,"value":"Microsoft.VisualStudio.Code"},` + strings.Join(cs, ",") + `],"pageNumber":1,"pageSize":50,"sortBy":0,"sortOrder":0}],"assetTypes":[],"flags":147}`
}

// galleryVersions reads an extensionquery answer: by id, its versions and
// each version's sources.
func galleryVersions(t *testing.T, body []byte) map[string]map[string][]string {
	t.Helper()
	var a struct {
		Results []struct {
			Extensions []struct {
				Publisher struct {
					Name string `json:"publisherName"`
				} `json:"publisher"`
				Name     string `json:"extensionName"`
				Versions []struct {
					Version  string `json:"version"`
					AssetURI string `json:"assetUri"`
					Fallback string `json:"fallbackAssetUri"`
					Files    []struct {
						Source string `json:"source"`
					} `json:"files"`
				} `json:"versions"`
			} `json:"extensions"`
			Meta []struct {
				Items []struct {
					Count int `json:"count"`
				} `json:"metadataItems"`
			} `json:"resultMetadata"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &a); err != nil || len(a.Results) != 1 {
		t.Fatalf("extensionquery answer: %v\n%s", err, body)
	}
	out := map[string]map[string][]string{}
	for _, e := range a.Results[0].Extensions {
		vs := map[string][]string{}
		for _, v := range e.Versions {
			vs[v.Version] = []string{v.AssetURI, v.Fallback}
			for _, f := range v.Files {
				vs[v.Version] = append(vs[v.Version], f.Source)
			}
		}
		out[e.Publisher.Name+"."+e.Name] = vs
	}
	if n := a.Results[0].Meta[0].Items[0].Count; n != len(out) {
		t.Fatalf("TotalCount %d for %d extensions:\n%s", n, len(out), body)
	}
	return out
}

// TestFirewallExtensions: Open VSX and the Visual Studio Marketplace
// through the firewall, from galleries served here as open-vsx.org and
// the Marketplace serve them. The real ovsx client gets an extension
// past a reported version and cannot get the reported one; the gallery
// API's extensionquery (both galleries), -/query and -/search lose the
// reported versions and a version in quarantine (by timestamp and
// lastUpdated); a refused .vsix and its assets are 403; what ovsx got is
// in the ledger, and a report verified later names who got it.
func TestFirewallExtensions(t *testing.T) {
	t.Parallel()
	ovsx := needTool(t, "ovsx")
	u := fakeregistry.New(t)
	u.Extension(t, "acme", "pad", []string{"1.0.0", "1.0.1", "1.0.2"}, fakeregistry.OldTimes(3))
	u.Extension(t, "acme", "other", []string{"1.0.0"}, fakeregistry.OldTimes(1))
	u.Extension(t, "acme", "fresh", []string{"1.0.0", "1.1.0"}, []time.Time{time.Now().Add(-30 * 24 * time.Hour), time.Now().Add(-10 * time.Minute)})
	cfg := fmt.Sprintf("firewall:\n  openvsx:\n    upstream: %q\n    file_hosts: [%q]\n  vscode:\n    upstream: %q\n  quarantine:\n    default: 48h\n",
		u.Srv.URL+"/openvsx", u.Srv.URL, u.Srv.URL+"/marketplace/_apis/public/gallery")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	admin := in.user("adm@example.com", "--role", "admin")
	d := in.serve()
	ov := base + "/firewall/openvsx"
	ms := base + "/firewall/vscode"
	evil := fwReport(t, in, d, tok, "openvsx", "acme.pad", "1.0.2")
	evilMS := fwReport(t, in, d, tok, "vscode", "acme.pad", "1.0.2")
	var latest struct {
		Version     string            `json:"version"`
		AllVersions map[string]string `json:"allVersions"`
		Files       map[string]string `json:"files"`
	}
	eventually(t, "the report in the index", func() bool {
		code, _, body := d.fwGet(ov+"/api/acme/pad", tok)
		latest.AllVersions, latest.Files = nil, nil
		return code == 200 && json.Unmarshal(body, &latest) == nil && latest.Version == "1.0.1"
	})
	if _, ok := latest.AllVersions["1.0.2"]; ok || latest.AllVersions["1.0.0"] != d.base+ov+"/api/acme/pad/1.0.0" || latest.AllVersions["latest"] == "" ||
		latest.Files["download"] != d.base+ov+"/api/acme/pad/1.0.1/file/acme.pad-1.0.1.vsix" || !strings.HasPrefix(latest.Files["manifest"], d.base+ov+"/api/acme/pad/1.0.1/file/") {
		t.Fatalf("latest moved to 1.0.1, its links through the firewall: %+v", latest)
	}
	code, _, body := d.fwGet(ov+"/api/acme/pad/1.0.2", tok)
	if code != 403 || !strings.Contains(string(body), evil) {
		t.Fatalf("the reported version's document: %d %s", code, body)
	}
	for _, p := range []string{"/api/acme/pad/1.0.2/file/acme.pad-1.0.2.vsix", "/vscode/asset/acme/pad/1.0.2/Microsoft.VisualStudio.Services.VSIXPackage",
		"/vscode/gallery/publishers/acme/vsextensions/pad/1.0.2/vspackage", "/vscode/unpkg/acme/pad/1.0.2/extension/package.json"} {
		if code, _, body := d.fwGet(ov+p, tok); code != 403 || !strings.Contains(string(body), "Blocked by threatd") || !strings.Contains(string(body), evil) {
			t.Fatalf("%s: %d %s", p, code, body)
		}
	}
	for _, p := range []string{"/vscode/asset/acme/pad/1.0.1/Microsoft.VisualStudio.Services.VSIXPackage", "/vscode/gallery/publishers/acme/vsextensions/pad/1.0.1/vspackage"} {
		if code, h, body := d.fwGet(ov+p, tok); code != 200 || !bytes.HasPrefix(body, []byte("PK")) || h.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("%s: %d %s", p, code, h)
		}
	}

	// The item page passes through (as text), its query checked.
	u.Put("/openvsx/vscode/item", "text/html", 300, []byte("<html>acme.pad</html>"))
	if code, h, body := d.fwGet(ov+"/vscode/item?itemName=acme.pad", tok); code != 200 || string(body) != "<html>acme.pad</html>" || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		t.Fatalf("vscode/item: %d %s %s", code, h.Get("Content-Type"), body)
	}
	if code, _, _ := d.fwGet(ov+"/vscode/item?itemName=nodot", tok); code != 400 {
		t.Fatalf("vscode/item of no extension: %d", code)
	}
	// The real ovsx: the latest allowed version, and no way to the reported one.
	dir, home := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "OVSX_USERNAME=token", "OVSX_PASSWORD=" + tok, "NODE_EXTRA_CA_CERTS=" + in.certFile()}
	out, ok := client(t, dir, env, ovsx, "get", "acme.pad", "-r", d.base+ov, "-o", dir+"/")
	if vsix, err := os.ReadFile(filepath.Join(dir, "acme.pad-1.0.1.vsix")); !ok || err != nil || !bytes.HasPrefix(vsix, []byte("PK")) {
		t.Fatalf("ovsx get acme.pad (ok %v):\n%s", ok, out)
	}
	out, ok = client(t, dir, env, ovsx, "get", "acme.pad", "-v", "1.0.2", "-r", d.base+ov, "-o", dir+"/")
	if ok || !strings.Contains(out, "no published version matching '1.0.2'") {
		t.Fatalf("ovsx get acme.pad -v 1.0.2 (ok %v):\n%s", ok, out)
	}
	t.Logf("ovsx's refusal:\n%s", out)
	if out, ok = client(t, dir, env, ovsx, "get", "acme.other", "-r", d.base+ov, "-o", dir+"/"); !ok {
		t.Fatalf("ovsx get acme.other:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "acme.pad-1.0.2.vsix")); err == nil {
		t.Fatal("the reported version was downloaded")
	}

	// The gallery API of both: the reported version and the one in
	// quarantine gone, every asset through the firewall.
	for _, g := range []struct{ path, reported string }{{ov + "/vscode/gallery/extensionquery", evil}, {ms + "/extensionquery", evilMS}} {
		code, body := d.fwPost(g.path, tok, galleryQuery("acme.pad", "acme.fresh", "acme.other"))
		if code != 200 {
			t.Fatalf("%s: %d %s", g.path, code, body)
		}
		got := galleryVersions(t, body)
		if len(got["acme.pad"]) != 2 || got["acme.pad"]["1.0.2"] != nil || got["acme.pad"]["1.0.1"] == nil || len(got["acme.fresh"]) != 1 || got["acme.fresh"]["1.1.0"] != nil {
			t.Fatalf("%s: %v", g.path, got)
		}
		for _, urls := range got["acme.pad"]["1.0.1"] {
			if !strings.HasPrefix(urls, d.base+strings.TrimSuffix(g.path, "/vscode/gallery/extensionquery")) && !strings.HasPrefix(urls, d.base+ms) {
				t.Fatalf("%s: an asset of 1.0.1 not through the firewall: %v", g.path, got["acme.pad"]["1.0.1"])
			}
		}
		// The asset URLs as VS Code builds them: assetUri + "/" + type.
		vsix := got["acme.pad"]["1.0.1"][0] + "/Microsoft.VisualStudio.Services.VSIXPackage"
		if code, _, body := d.fwGet(strings.TrimPrefix(vsix, d.base), tok); code != 200 || !bytes.HasPrefix(body, []byte("PK")) {
			t.Fatalf("%s: %d %.200s", vsix, code, body)
		}
		blocked := strings.ReplaceAll(vsix, "1.0.1", "1.0.2")
		if code, _, body := d.fwGet(strings.TrimPrefix(blocked, d.base), tok); code != 403 || !strings.Contains(string(body), g.reported) {
			t.Fatalf("%s: %d %s", blocked, code, body)
		}
	}
	// The galleries compare ids in any case: so does the firewall.
	if code, _, body := d.fwGet(ms+"/publishers/ACME/vsextensions/Pad/1.0.2/vspackage", tok); code != 403 || !strings.Contains(string(body), evilMS) {
		t.Fatalf("the reported version asked in another case: %d %s", code, body)
	}
	if code, _, body := d.fwGet(ms+"/publishers/acme/vsextensions/fresh/1.1.0/vspackage", tok); code != 403 || !strings.Contains(string(body), `"rule":"quarantine"`) {
		t.Fatalf("the Marketplace's vspackage of a version in quarantine: %d %s", code, body)
	}
	if code, _, body := d.fwGet(ov+"/api/acme/fresh/1.1.0/file/acme.fresh-1.1.0.vsix", tok); code != 403 || !strings.Contains(string(body), `"rule":"quarantine"`) {
		t.Fatalf("Open VSX's .vsix of a version in quarantine: %d %s", code, body)
	}
	if code, body := d.fwPost(ms+"/extensionquery", tok, `{"filters":"x"}`); code != 400 || !strings.Contains(string(body), "extension query") {
		t.Fatalf("a malformed query: %d %s", code, body)
	}

	// -/search moves an extension to its highest allowed version; -/query
	// leaves out the reported version's document.
	code, _, body = d.fwGet(ov+"/api/-/search?query=acme&includeAllVersions=true", tok)
	if code != 200 || !strings.Contains(string(body), `"version":"1.0.1"`) || strings.Contains(string(body), `"1.0.2"`) || strings.Contains(string(body), `"1.1.0"`) ||
		strings.Contains(string(body), u.Srv.URL) {
		t.Fatalf("-/search: %d %s", code, body)
	}
	code, _, body = d.fwGet(ov+"/api/-/query?extensionId=acme.pad&includeAllVersions=true", tok)
	if code != 200 || strings.Contains(string(body), `"1.0.2"`) || !strings.Contains(string(body), `"version":"1.0.0"`) || strings.Contains(string(body), u.Srv.URL) {
		t.Fatalf("-/query: %d %s", code, body)
	}

	// VS Code's download of acme.other from the Marketplace, through the firewall.
	if code, _, _ := d.fwGet(ms+"/publisher/acme/extension/other/1.0.0/assetbyname/Microsoft.VisualStudio.Services.VSIXPackage", tok); code != 200 {
		t.Fatalf("the Marketplace's asset of acme.other: %d", code)
	}
	otherMS := fwReport(t, in, d, admin, "vscode", "acme.other", "")
	d.soleExposure(t, "the exposure of what VS Code got", admin, otherMS, func(e map[string]any) bool {
		return e["user"] == "dev@example.com" && e["purl"] == "pkg:vscode-extension/acme/other@1.0.0"
	})
	// Exposure: a report verified after ovsx got acme.other names who got it.
	other := fwReport(t, in, d, admin, "openvsx", "acme.other", "")
	d.soleExposure(t, "the exposure of what ovsx got", admin, other, func(e map[string]any) bool {
		return e["user"] == "dev@example.com" && e["kind"] == "served" && e["purl"] == "pkg:vscode-extension/acme/other@1.0.0?repository_url=https:%2F%2Fopen-vsx.org"
	})
}
