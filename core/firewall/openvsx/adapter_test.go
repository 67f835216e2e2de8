package openvsx

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

const extDoc = `{"namespace":"acme","name":"pad","version":"1.0.1","targetPlatform":"universal","timestamp":"2026-01-02T03:04:05.123456Z",
"versionAlias":["latest"],"allVersions":{"latest":"https://open-vsx.org/api/acme/pad/latest","1.0.2":"https://open-vsx.org/api/acme/pad/1.0.2","1.0.1":"https://open-vsx.org/api/acme/pad/1.0.1","1.0.0":"https://open-vsx.org/api/acme/pad/1.0.0"},
"files":{"download":"https://openvsxorg.blob.core.windows.net/resources/acme/pad/1.0.1/acme.pad-1.0.1.vsix","manifest":"https://open-vsx.org/api/acme/pad/1.0.1/file/package.json"},
"namespaceUrl":"https://open-vsx.org/api/acme","homepage":"https://github.com/acme/pad","description":"<b>&</b>"}`

// TestRewriteListed: refused versions leave allVersions, whose order is
// kept (newest first, as ovsx reads it); every link and file is the
// firewall's; other fields are written as they came.
func TestRewriteListed(t *testing.T) {
	judge := func(v string) (bool, string) { return v == "1.0.2", "no" }
	doc := firewall.Document{Body: []byte(extDoc), URL: "https://open-vsx.org/api/acme/pad/1.0.1", Name: "acme.pad"}
	out, err := Adapter{}.RewriteListed(doc, judge, "https://fw.example/f/openvsx")
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		`"allVersions":{"latest":"https://fw.example/f/openvsx/api/acme/pad/latest","1.0.1":"https://fw.example/f/openvsx/api/acme/pad/1.0.1","1.0.0":`,
		`"download":"https://fw.example/f/openvsx/api/acme/pad/1.0.1/file/acme.pad-1.0.1.vsix"`,
		`"manifest":"https://fw.example/f/openvsx/api/acme/pad/1.0.1/file/package.json"`,
		`"namespaceUrl":"https://fw.example/f/openvsx/api/acme"`, `"homepage":"https://github.com/acme/pad"`, `"description":"<b>&</b>"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in\n%s", want, s)
		}
	}
	if strings.Contains(s, "1.0.2") || strings.Contains(s, "open-vsx.org") || strings.Contains(s, "blob.core") {
		t.Errorf("a refused version or an upstream link left:\n%s", s)
	}
	ps, err := Adapter{}.Versions(doc)
	if err != nil || len(ps) != 3 || ps[0].Version != "1.0.1" || ps[0].Time.IsZero() || ps[1].Version != "1.0.2" {
		t.Fatalf("versions: %+v %v", ps, err)
	}
	var v map[string]any
	if json.Unmarshal(out, &v) != nil {
		t.Fatalf("not JSON: %s", out)
	}
}

// TestRoutes: the registry API's and the gallery API's paths, and the
// paths that could climb or are unknown.
func TestRoutes(t *testing.T) {
	for path, want := range map[string]string{
		"api/acme/pad":                                "3 acme.pad  api/acme/pad",
		"api/acme/pad/latest":                         "3 acme.pad  api/acme/pad/latest",
		"api/acme/pad/linux-x64":                      "3 acme.pad  api/acme/pad/linux-x64",
		"api/acme/pad/1.0.1":                          "3 acme.pad 1.0.1 api/acme/pad/1.0.1",
		"api/acme/pad/linux-x64/1.0.1/file/a.vsix":    "4 acme.pad 1.0.1 api/acme/pad/linux-x64/1.0.1/file/a.vsix",
		"api/acme/pad/1.0.1/file/acme.pad-1.0.1.vsix": "4 acme.pad 1.0.1 api/acme/pad/1.0.1/file/acme.pad-1.0.1.vsix",
		"vscode/asset/acme/pad/1.0.1/Microsoft.VisualStudio.Services.Icons.Default": "4 acme.pad 1.0.1 vscode/asset/acme/pad/1.0.1/Microsoft.VisualStudio.Services.Icons.Default",
		"vscode/unpkg/acme/pad/1.0.1/extension/package.json":                        "4 acme.pad 1.0.1 vscode/unpkg/acme/pad/1.0.1/extension/package.json",
		"vscode/gallery/publishers/acme/vsextensions/pad/1.0.1/vspackage":           "4 acme.pad 1.0.1 vscode/gallery/publishers/acme/vsextensions/pad/1.0.1/vspackage",
		"api/-/search":               "2   api/-/search",
		"api/acme/pad/%2e%2e/file/x": "error", "vscode/unpkg/acme/pad/1.0.1/..%2f..%2fx": "error", "api/acme/pad/reviews": "none", "nope": "none",
	} {
		rt, ok, err := Adapter{}.Route(firewall.Request{Path: path})
		got := "none"
		switch {
		case err != nil:
			got = "error"
		case ok:
			got = strings.Join([]string{string(rune('0' + rt.Kind)), rt.Name, rt.Version, rt.Upstream}, " ")
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", path, got, want)
		}
	}
}
