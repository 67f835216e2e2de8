package composer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

// p2 is a minified p2 document as repo.packagist.org serves it: the newest
// version whole, each older one with what differs, "__unset" for a key
// the newer one had (1.0.0 has no "require-dev").
const p2 = `{"packages":{"acme/lib":[
{"name":"acme/lib","version":"1.0.2","version_normalized":"1.0.2.0","time":"2026-11-20T10:00:00+00:00",
 "source":{"type":"git","url":"https://github.com/acme/lib.git","reference":"ccc"},
 "dist":{"type":"zip","url":"https://api.github.com/repos/acme/lib/zipball/ccc","reference":"ccc","shasum":""},
 "require":{"php":">=8.1"},"require-dev":{"phpunit/phpunit":"^10"}},
{"version":"1.0.1","version_normalized":"1.0.1.0","time":"2026-11-10T10:00:00+00:00",
 "source":{"type":"git","url":"https://github.com/acme/lib.git","reference":"bbb"},
 "dist":{"type":"zip","url":"https://api.github.com/repos/acme/lib/zipball/bbb","reference":"bbb","shasum":""},
 "require":{"php":">=8.0"}},
{"version":"1.0.0","version_normalized":"1.0.0.0","time":"2026-11-01T10:00:00+00:00",
 "source":{"type":"git","url":"https://github.com/acme/lib.git","reference":"aaa"},
 "dist":{"type":"zip","url":"https://api.github.com/repos/acme/lib/zipball/aaa","reference":"aaa","shasum":""},
 "require-dev":"__unset"}
]},"minified":"composer/2.0"}`

func doc(body string) firewall.Document {
	return firewall.Document{Body: []byte(body), Name: "acme/lib", URL: "https://repo.packagist.org/p2/acme/lib.json", ContentType: "application/json"}
}

// expanded reads a p2 document as Composer does: each version whole.
func expanded(t *testing.T, body []byte) map[string]version {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	ps, _, err := parseP2(doc(string(body)), top)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]version{}
	for _, v := range ps["acme/lib"] {
		out[v.field("version")] = v
	}
	return out
}

// TestRewriteDropsRefusedVersions: the middle version refused, the rest
// expand to what they were (1.0.0 still without require-dev, with the
// require it inherits), their dists through the firewall, no source.
func TestRewriteDropsRefusedVersions(t *testing.T) {
	judge := func(v string) (bool, string) { return v == "1.0.1", "malicious" }
	r, err := Adapter{}.Rewrite(doc(p2), judge, "https://fw.example/functions/v1/firewall/composer")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Body), `"minified":"composer/2.0"`) {
		t.Fatalf("not minified: %s", r.Body)
	}
	before, after := expanded(t, []byte(p2)), expanded(t, r.Body)
	if len(after) != 2 || after["1.0.1"] != nil {
		t.Fatalf("versions %v", after)
	}
	for _, v := range []string{"1.0.2", "1.0.0"} {
		a, b := after[v], before[v]
		if _, ok := a["source"]; ok {
			t.Errorf("%s keeps its source", v)
		}
		var dist, was map[string]string
		_ = json.Unmarshal(a["dist"], &dist)
		_ = json.Unmarshal(b["dist"], &was)
		if dist["url"] != "https://fw.example/functions/v1/firewall/composer/dist/acme/lib/"+v || dist["reference"] != was["reference"] || dist["type"] != "zip" {
			t.Errorf("%s dist %v", v, dist)
		}
		for k, x := range b {
			if k != "source" && k != "dist" && string(a[k]) != string(x) {
				t.Errorf("%s: %s is %s, was %s", v, k, a[k], x)
			}
		}
		if len(a) != len(b)-1 {
			t.Errorf("%s: keys %d, were %d", v, len(a), len(b))
		}
	}
	if _, ok := after["1.0.0"]["require-dev"]; ok {
		t.Errorf("1.0.0 gained require-dev: %s", r.Body)
	}
	if string(after["1.0.0"]["require"]) != `{"php":">=8.0"}` {
		t.Errorf("1.0.0 require %s: it inherits 1.0.1's, which is gone", after["1.0.0"]["require"])
	}
}

// TestMinifyRoundTrip: expanding a minified document and minifying it
// again gives the same versions.
func TestMinifyRoundTrip(t *testing.T) {
	var top map[string]json.RawMessage
	_ = json.Unmarshal([]byte(p2), &top)
	ps, _, err := parseP2(doc(p2), top)
	if err != nil {
		t.Fatal(err)
	}
	again, err := expand(minify(ps["acme/lib"]), true)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range ps["acme/lib"] {
		if string(v.marshal()) != string(again[i].marshal()) {
			t.Errorf("version %d: %s, was %s", i, again[i].marshal(), v.marshal())
		}
	}
}

// TestFilesVersionsAndRoot: the dists by version, the times, and
// packages.json pointing metadata-url at the firewall only.
func TestFilesVersionsAndRoot(t *testing.T) {
	files, err := Adapter{}.Files(doc(p2))
	if err != nil || files["1.0.1"].URL != "https://api.github.com/repos/acme/lib/zipball/bbb" || len(files) != 3 {
		t.Fatalf("files %v %v", files, err)
	}
	vs, err := Adapter{}.Versions(doc(p2))
	if err != nil || len(vs) != 3 || vs[2].Version != "1.0.0" || vs[2].Time.Format("2006-01-02") != "2026-11-01" {
		t.Fatalf("versions %v %v", vs, err)
	}
	root := `{"packages":[],"metadata-url":"/p2/%package%.json","notify-batch":"https://packagist.org/downloads/","search":"https://packagist.org/search.json?q=%query%","providers-url":"/p/%package%$%hash%.json"}`
	r, err := Adapter{}.Rewrite(firewall.Document{Body: []byte(root)}, nil, "https://fw.example/f/composer")
	if err != nil || string(r.Body) != `{"metadata-url":"https://fw.example/f/composer/p2/%package%.json","packages":[]}` {
		t.Fatalf("packages.json: %s %v", r.Body, err)
	}
}

// TestParse: the paths the firewall serves, and names it cannot judge.
func TestParse(t *testing.T) {
	for path, want := range map[string]Request{
		"packages.json":          {Kind: Root},
		"p2/acme/lib.json":       {Kind: Metadata, Name: "acme/lib"},
		"p2/Acme/Lib~dev.json":   {Kind: Metadata, Name: "acme/lib", Dev: true},
		"dist/acme/lib/v1.0.1":   {Kind: Dist, Name: "acme/lib", Version: "v1.0.1"},
		"dist/acme/lib/dev-main": {Kind: Dist, Name: "acme/lib", Version: "dev-main", Dev: true},
		"dist/acme/lib/1.x-dev":  {Kind: Dist, Name: "acme/lib", Version: "1.x-dev", Dev: true},
	} {
		got, ok, err := Parse(path)
		if !ok || err != nil || got != want {
			t.Errorf("%s: %+v %v %v", path, got, ok, err)
		}
	}
	for _, path := range []string{"p2/acme/..json", "p2/ac%2fme/lib.json", "dist/acme/lib/a%20b", "dist/acme/lib/1.0%00", "dist/acme/lib/1.0%7f"} {
		if _, _, err := Parse(path); err == nil {
			t.Errorf("%s: judged", path)
		}
	}
	if _, ok, err := Parse("p/acme/lib.json"); ok || err != nil {
		t.Errorf("Composer 1's providers: %v %v", ok, err)
	}
}
