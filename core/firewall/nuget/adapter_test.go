package nuget

import (
	"errors"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

func TestParse(t *testing.T) {
	for path, want := range map[string]Request{
		"v3/index.json": {Kind: ServiceIndex, Path: "v3/index.json"},
		"v3-flatcontainer/Newtonsoft.Json/index.json":    {Kind: FlatIndex, ID: "newtonsoft.json", Path: "v3-flatcontainer/newtonsoft.json/index.json"},
		"v3-flatcontainer/a.b/1.0.0/a.b.1.0.0.nupkg":     {Kind: File, ID: "a.b", Version: "1.0.0", Path: "v3-flatcontainer/a.b/1.0.0/a.b.1.0.0.nupkg"},
		"v3-flatcontainer/a.b/1.0.0-RC/a.b.nuspec":       {Kind: File, ID: "a.b", Version: "1.0.0-rc", Path: "v3-flatcontainer/a.b/1.0.0-rc/a.b.nuspec"},
		"v3/registration5-gz-semver2/a.b/index.json":     {Kind: Registration, ID: "a.b", Path: "v3/registration5-gz-semver2/a.b/index.json"},
		"v3/registration5-semver1/a.b/page/1.0/2.0.json": {Kind: Registration, ID: "a.b", Path: "v3/registration5-semver1/a.b/page/1.0/2.0.json"},
		"v3/registration5-semver1/a.b/1.0.0.json":        {Kind: File, ID: "a.b", Version: "1.0.0", Path: "v3/registration5-semver1/a.b/1.0.0.json"},
	} {
		got, ok, err := Parse(path)
		if err != nil || !ok || got != want {
			t.Errorf("Parse(%q) = %+v %v %v, want %+v", path, got, ok, err, want)
		}
	}
	for _, path := range []string{"v3/other.json", "v3-flatcontainer/a.b/1.0.0/c.d.1.0.0.nupkg", "v3/catalog0/index.json"} {
		if _, ok, err := Parse(path); ok || err != nil {
			t.Errorf("Parse(%q): %v %v, want an unknown path", path, ok, err)
		}
	}
	for _, path := range []string{"v3-flatcontainer/%2e%2e/index.json", "v3-flatcontainer/a%2fb/index.json", "v3-flatcontainer//index.json"} {
		var u *firewall.Unjudgeable
		if _, _, err := Parse(path); !errors.As(err, &u) {
			t.Errorf("Parse(%q): %v, want unjudgeable", path, err)
		}
	}
}

func TestServiceIndexOutsideRoot(t *testing.T) {
	doc := firewall.Document{URL: "https://api.example/v3/index.json", Body: []byte(`{"resources":[{"@id":"https://cdn.other/flat/","@type":"PackageBaseAddress/3.0.0"}]}`)}
	if _, err := (Adapter{}).Rewrite(doc, nil, "B"); err == nil || !strings.Contains(err.Error(), "outside its root") {
		t.Fatalf("%v", err)
	}
	if _, err := (Adapter{}).Root("https://api.example/index.json"); err == nil {
		t.Fatal("an upstream that is not a service index is refused")
	}
}
