package vsgallery

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

// marketAnswer is an extensionquery answer as the Marketplace writes it: two
// extensions, one version of a target platform, fields the firewall does
// not read.
const marketAnswer = `{"results":[{"extensions":[
{"publisher":{"publisherId":"p1","publisherName":"acme","displayName":"Acme & Co"},"extensionId":"e1","extensionName":"pad","flags":"validated",
 "versions":[
  {"version":"1.0.2","lastUpdated":"2026-11-27T10:00:00.000Z","assetUri":"https://acme.gallerycdn.vsassets.io/extensions/acme/pad/1.0.2/1","fallbackAssetUri":"https://acme.gallery.vsassets.io/x",
   "files":[{"assetType":"Microsoft.VisualStudio.Services.VSIXPackage","source":"https://acme.gallerycdn.vsassets.io/extensions/acme/pad/1.0.2/1/Microsoft.VisualStudio.Services.VSIXPackage"}]},
  {"version":"1.0.1","targetPlatform":"linux-x64","lastUpdated":"2026-01-01T00:00:00Z","assetUri":"https://acme.gallerycdn.vsassets.io/a","fallbackAssetUri":"https://acme.gallery.vsassets.io/b",
   "files":[{"assetType":"Microsoft.VisualStudio.Services.VSIXPackage","source":"https://acme.gallerycdn.vsassets.io/a/Microsoft.VisualStudio.Services.VSIXPackage"}],
   "properties":[{"key":"Microsoft.VisualStudio.Code.Engine","value":"^1.80.0"}]}]},
{"publisher":{"publisherName":"evil"},"extensionName":"all","versions":[{"version":"0.1.0","lastUpdated":"2026-01-01T00:00:00Z"}]},
{"publisher":{"publisherName":"acme"},"extensionName":"bare"}],
"pagingToken":null,"resultMetadata":[{"metadataType":"ResultCount","metadataItems":[{"name":"TotalCount","count":3}]},{"metadataType":"Categories","metadataItems":[{"name":"Themes","count":1}]}]}]}`

// TestRewrite: a refused version leaves its extension's versions; an
// extension with none left leaves the result, and TotalCount with it; an
// extension listed without versions stays; every asset is the
// firewall's; what the firewall does not read is as it came.
func TestRewrite(t *testing.T) {
	var asked map[string][]firewall.Published
	judges := func(listed map[string][]firewall.Published) (map[string]firewall.Judge, error) {
		asked = listed
		return map[string]firewall.Judge{
			"acme.pad": func(v string) (bool, string) { return v == "1.0.2", "" },
			"evil.all": func(string) (bool, string) { return true, "" },
		}, nil
	}
	out, err := Rewrite([]byte(marketAnswer), judges, func(pub, name, ver string) string { return "https://fw/" + pub + "/" + name + "/" + ver })
	if err != nil {
		t.Fatal(err)
	}
	if len(asked["acme.pad"]) != 2 || asked["acme.pad"][0].Time.IsZero() || len(asked["evil.all"]) != 1 || asked["acme.bare"] == nil {
		t.Fatalf("what the judges were asked: %+v", asked)
	}
	s := string(out)
	for _, want := range []string{`"displayName":"Acme & Co"`, `"assetUri":"https://fw/acme/pad/1.0.1"`, `"fallbackAssetUri":"https://fw/acme/pad/1.0.1"`,
		`"source":"https://fw/acme/pad/1.0.1/Microsoft.VisualStudio.Services.VSIXPackage?targetPlatform=linux-x64"`, `"extensionName":"bare"`,
		`{"count":2,"name":"TotalCount"}`, `{"count":1,"name":"Themes"}`, `"key":"Microsoft.VisualStudio.Code.Engine"`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in\n%s", want, s)
		}
	}
	for _, bad := range []string{"1.0.2", "evil", "vsassets.io"} {
		if strings.Contains(s, bad) {
			t.Errorf("%s left in\n%s", bad, s)
		}
	}
	var v any
	if json.Unmarshal(out, &v) != nil {
		t.Fatalf("not JSON: %s", out)
	}
	// A judge that fails fails the rewrite: nothing unjudged is served.
	if _, err := Rewrite([]byte(marketAnswer), func(map[string][]firewall.Published) (map[string]firewall.Judge, error) {
		return nil, errors.New("index down")
	},
		func(string, string, string) string { return "" }); err == nil {
		t.Fatal("a failed judgement served")
	}
	for _, bad := range []string{`[]`, `{"results":{}}`, `{"results":[{"extensions":[{"publisher":{},"extensionName":"x"}]}]}`, `{"results":[{"extensions":[{"publisher":{"publisherName":"a"},"extensionName":"x","versions":{}}]}]}`} {
		if _, err := Rewrite([]byte(bad), judges, func(string, string, string) string { return "" }); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestParseQuery: a query is written again from what was read, within
// its bounds; anything else is a 400 naming the problem.
func TestParseQuery(t *testing.T) {
	b, err := ParseQuery("vscode", []byte(`{"filters":[{"criteria":[{"filterType":7,"value":"acme.pad"}],"pageNumber":1,"pageSize":10,"extra":1}],"flags":914,"unknown":"x"}`))
	if err != nil || string(b) != `{"filters":[{"criteria":[{"filterType":7,"value":"acme.pad"}],"pageNumber":1,"pageSize":10,"sortBy":0,"sortOrder":0}],"assetTypes":[],"flags":914}` {
		t.Fatalf("%s %v", b, err)
	}
	many := `{"filters":[{"criteria":[` + strings.Repeat(`{"filterType":7,"value":"a.b"},`, 1000) + `{"filterType":7,"value":"a.b"}]}]}`
	for body, want := range map[string]string{`x`: "not an extension query", `{"filters":[]}`: "1 to 8 filters", many: "at most 1000 criteria",
		`{"filters":[{"pageSize":5000}]}`: "pageSize", `{"filters":[{"criteria":[{"value":"` + strings.Repeat("a", 2000) + `"}]}]}`: "longer than 1024"} {
		_, err := ParseQuery("vscode", []byte(body))
		var u *firewall.Unjudgeable
		if !errors.As(err, &u) || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40s: %v, want %q", body, err, want)
		}
	}
	if got := string(NameQuery("acme.pad")); !strings.Contains(got, `{"filterType":7,"value":"acme.pad"}`) || !strings.Contains(got, `"flags":1`) {
		t.Fatalf("NameQuery: %s", got)
	}
}
