package nuget

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core/firewall"
)

func TestParse(t *testing.T) {
	for path, want := range map[string]Request{
		"v3/index.json": {Kind: ServiceIndex},
		"res/PackageBaseAddress_3.0.0/Newtonsoft.Json/index.json":          {Kind: FlatIndex, ID: "newtonsoft.json", Path: "res/PackageBaseAddress_3.0.0/newtonsoft.json/index.json"},
		"res/PackageBaseAddress_3.0.0/a.b/1.0.0/a.b.1.0.0.nupkg":           {Kind: File, ID: "a.b", Version: "1.0.0", Path: "res/PackageBaseAddress_3.0.0/a.b/1.0.0/a.b.1.0.0.nupkg"},
		"res/PackageBaseAddress_3.0.0/a.b/1.0.0-RC/a.b.nuspec":             {Kind: File, ID: "a.b", Version: "1.0.0-rc", Path: "res/PackageBaseAddress_3.0.0/a.b/1.0.0-rc/a.b.nuspec"},
		"res/RegistrationsBaseUrl_3.6.0/a.b/index.json":                    {Kind: Registration, ID: "a.b", Path: "res/RegistrationsBaseUrl_3.6.0/a.b/index.json"},
		"res/RegistrationsBaseUrl/a.b/page/1.0/2.0.json":                   {Kind: Registration, ID: "a.b", Path: "res/RegistrationsBaseUrl/a.b/page/1.0/2.0.json"},
		"res/RegistrationsBaseUrl/A.B/1.0.0.json":                          {Kind: File, ID: "a.b", Version: "1.0.0", Path: "res/RegistrationsBaseUrl/a.b/1.0.0.json"},
		"res/RegistrationsBaseUrl_Versioned/a.b/index.json":                {Kind: Registration, ID: "a.b", Path: "res/RegistrationsBaseUrl_Versioned/a.b/index.json"},
		"res/PackageBaseAddress_3.0.0/fw.evil/1.0.1/fw.evil.1.0.1.nupkg":   {Kind: File, ID: "fw.evil", Version: "1.0.1", Path: "res/PackageBaseAddress_3.0.0/fw.evil/1.0.1/fw.evil.1.0.1.nupkg"},
		"res/PackageBaseAddress_3.0.0/FW.Evil/1.0.1/FW.Evil.1.0.1.nupkg":   {Kind: File, ID: "fw.evil", Version: "1.0.1", Path: "res/PackageBaseAddress_3.0.0/fw.evil/1.0.1/fw.evil.1.0.1.nupkg"},
		"res/PackageBaseAddress_3.0.0/fw.evil/1.0.1-beta.1/fw.evil.nuspec": {Kind: File, ID: "fw.evil", Version: "1.0.1-beta.1", Path: "res/PackageBaseAddress_3.0.0/fw.evil/1.0.1-beta.1/fw.evil.nuspec"},
		// api.nuget.org's paths, as the firewall served them before.
		"v3-flatcontainer/Newtonsoft.Json/index.json":    {Kind: FlatIndex, ID: "newtonsoft.json", Path: "res/legacy:v3-flatcontainer/newtonsoft.json/index.json"},
		"v3-flatcontainer/a.b/1.0.0/a.b.1.0.0.nupkg":     {Kind: File, ID: "a.b", Version: "1.0.0", Path: "res/legacy:v3-flatcontainer/a.b/1.0.0/a.b.1.0.0.nupkg"},
		"v3/registration5-gz-semver2/a.b/index.json":     {Kind: Registration, ID: "a.b", Path: "res/legacy:v3~registration5-gz-semver2/a.b/index.json"},
		"v3/registration5-semver1/a.b/page/1.0/2.0.json": {Kind: Registration, ID: "a.b", Path: "res/legacy:v3~registration5-semver1/a.b/page/1.0/2.0.json"},
		"v3/registration5-semver1/a.b/1.0.0.json":        {Kind: File, ID: "a.b", Version: "1.0.0", Path: "res/legacy:v3~registration5-semver1/a.b/1.0.0.json"},
	} {
		got, ok, err := Parse(path)
		if err != nil || !ok || got != want {
			t.Errorf("Parse(%q) = %+v %v %v, want %+v", path, got, ok, err, want)
		}
	}
	for _, path := range []string{"v3/other.json", "res/PackageBaseAddress_3.0.0/a.b/1.0.0/c.d.1.0.0.nupkg", "res/SearchQueryService/a/index.json",
		"res/PackageBaseAddress_3.0.0/a.b", "v3/catalog0/index.json", "v3/registration"} {
		if _, ok, err := Parse(path); ok || err != nil {
			t.Errorf("Parse(%q): %v %v, want an unknown path", path, ok, err)
		}
	}
	for _, path := range []string{"res/PackageBaseAddress_3.0.0/%2e%2e/index.json", "res/PackageBaseAddress_3.0.0/a%2fb/index.json", "res/PackageBaseAddress_3.0.0//index.json"} {
		var u *firewall.Unjudgeable
		if _, _, err := Parse(path); !errors.As(err, &u) {
			t.Errorf("Parse(%q): %v, want unjudgeable", path, err)
		}
	}
}

// The bases are wherever the service index says, SemVer 2's hive the one
// facts are read from; a resource of a type the firewall cannot name
// fails the rewrite (it would pass packages around the firewall).
func TestServiceIndex(t *testing.T) {
	idx := []byte(`{"version": "3.0.0", "resources": [
	  {"@id": "https://feed.example/nuget/v3/flat2", "@type": "PackageBaseAddress/3.0.0"},
	  {"@id": "https://feed.example/nuget/v3/registrations2/", "@type": "RegistrationsBaseUrl"},
	  {"@id": "https://cdn.example/hives/semver2-gz/", "@type": "RegistrationsBaseUrl/3.6.0"},
	  {"@id": "https://search.example/query", "@type": "SearchQueryService"}]}`)
	bases, err := Adapter{}.Bases(firewall.Document{Body: idx})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"PackageBaseAddress_3.0.0": "https://feed.example/nuget/v3/flat2/", "RegistrationsBaseUrl": "https://feed.example/nuget/v3/registrations2/",
		"RegistrationsBaseUrl_3.6.0": "https://cdn.example/hives/semver2-gz/", Registrations: "https://cdn.example/hives/semver2-gz/",
		Legacy + "v3~registrations2": "https://feed.example/nuget/v3/registrations2/"}
	if len(bases) != len(want) {
		t.Fatalf("bases %v, want %v", bases, want)
	}
	for k, v := range want {
		if bases[k] != v {
			t.Errorf("base %s = %q, want %q", k, bases[k], v)
		}
	}
	r, err := Adapter{}.Rewrite(firewall.Document{Body: idx}, nil, "B")
	if err != nil || !strings.Contains(string(r.Body), `"@id":"B/res/PackageBaseAddress_3.0.0/"`) || !strings.Contains(string(r.Body), `"@id":"https://search.example/query"`) {
		t.Fatalf("service index: %s %v", r.Body, err)
	}
	odd := firewall.Document{Body: []byte(`{"resources":[{"@id":"https://x/","@type":"PackageBaseAddress/3.0.0 beta"}]}`)}
	if _, err := (Adapter{}).Rewrite(odd, nil, "B"); err == nil || !strings.Contains(err.Error(), "cannot serve") {
		t.Fatalf("a resource type the firewall cannot name: %v", err)
	}
	if _, err := (Adapter{}).Root("https://api.example/feed.json"); err == nil {
		t.Fatal("an upstream that is not a service index is refused")
	}
	if u, err := (Adapter{}).Root("https://nuget.pkg.github.com/acme/index.json"); err != nil || u != "https://nuget.pkg.github.com/acme/index.json" {
		t.Fatalf("GitHub Packages' service index: %q %v", u, err)
	}
}

// A registration page's leaves carry their facts; an unlisted version's
// "published 1900" is no publish time.
func TestRegistrationFacts(t *testing.T) {
	page := `{"items":[{"items":[
	  {"catalogEntry":{"version":"1.0.0","published":"2024-01-02T03:04:05+00:00","listed":true}},
	  {"catalogEntry":{"version":"2.0.0","published":"1900-01-01T00:00:00+00:00","listed":false}}]}]}`
	ps, err := Adapter{}.Versions(firewall.Document{Body: []byte(page), Variant: variantRegistration})
	if err != nil || len(ps) != 2 || ps[0].Version != "1.0.0" || !ps[0].Time.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) || ps[1].Version != "2.0.0" || !ps[1].Time.IsZero() {
		t.Fatalf("registration facts: %+v %v", ps, err)
	}
	leaf := `{"listed": false, "published": "1900-01-01T00:00:00+00:00"}`
	if ps, err := (Adapter{}).Versions(firewall.Document{Body: []byte(leaf)}); err != nil || len(ps) != 1 || !ps[0].Time.IsZero() {
		t.Fatalf("an unlisted leaf: %+v %v", ps, err)
	}
}
