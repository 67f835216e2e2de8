package npm

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core/firewall"
)

// referenceRewrite is the firewall's first rewrite of a package document,
// on decoded maps: the specification Rewrite must agree with.
func referenceRewrite(body []byte, blocked func(string) bool, name, base string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	str := func(m map[string]json.RawMessage, k string) string {
		var s string
		if raw, ok := m[k]; ok {
			_ = json.Unmarshal(raw, &s)
		}
		return s
	}
	if n := str(doc, "name"); n != "" {
		name = n
	}
	var versions map[string]json.RawMessage
	if raw, ok := doc["versions"]; ok {
		if err := json.Unmarshal(raw, &versions); err != nil {
			return nil, err
		}
	}
	removed := map[string]bool{}
	for ver, raw := range versions {
		if blocked(ver) {
			removed[ver] = true
			delete(versions, ver)
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		if raw, ok := m["dist"]; ok {
			var dist map[string]json.RawMessage
			if err := json.Unmarshal(raw, &dist); err != nil {
				return nil, err
			}
			if t := str(dist, "tarball"); t != "" {
				dist["tarball"], _ = json.Marshal(base + "/" + Escape(name) + "/-/" + path.Base(t))
			}
			m["dist"], _ = json.Marshal(dist)
		}
		versions[ver], _ = json.Marshal(m)
	}
	if versions != nil {
		doc["versions"], _ = json.Marshal(versions)
	}
	if len(removed) > 0 {
		if raw, ok := doc["time"]; ok {
			var times map[string]json.RawMessage
			if json.Unmarshal(raw, &times) == nil {
				for ver := range removed {
					delete(times, ver)
				}
				doc["time"], _ = json.Marshal(times)
			}
		}
		if raw, ok := doc["dist-tags"]; ok {
			var tags map[string]string
			if err := json.Unmarshal(raw, &tags); err != nil {
				return nil, err
			}
			highest := highestRelease(slices.Collect(maps.Keys(versions)))
			for tag, ver := range tags {
				if removed[ver] {
					if highest == "" {
						delete(tags, tag)
					} else {
						tags[tag] = highest
					}
				}
			}
			doc["dist-tags"], _ = json.Marshal(tags)
		}
	}
	return json.Marshal(doc)
}

func blockedSet(vs ...string) func(string) bool {
	return func(v string) bool { return slices.Contains(vs, v) }
}

// decoded is a JSON document as a value, for comparisons.
func decoded(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %.300s", err, b)
	}
	return v
}

func TestRewrite(t *testing.T) {
	doc := []byte(`{"_id":"evil","name":"evil","dist-tags":{"latest":"1.0.2","beta":"2.0.0-beta.1","old":"0.9.0"},
 "versions":{"0.9.0":{"name":"evil","version":"0.9.0","dist":{"tarball":"https://registry.npmjs.org/evil/-/evil-0.9.0.tgz","shasum":"a"}},
  "1.0.2":{"name":"evil","version":"1.0.2","dist":{"tarball":"https://registry.npmjs.org/evil/-/evil-1.0.2.tgz"}},
  "vers\u0069on-escaped":null,
  "1.0.\u0031":{"dist":{"tarball":"https://registry.npmjs.org/evil/-/evil-1.0.1.tgz"}},
  "2.0.0-beta.1":{"dist":{"tarball":"https://registry.npmjs.org/evil/-/evil-2.0.0-beta.1.tgz"}}},
 "time":{"created":"2020","0.9.0":"2021","1.0.1":"2022","1.0.2":"2023"},"readme":"<b>&</b>"}`)
	out, err := Rewrite(doc, blockedSet("1.0.2", "1.0.1"), "evil", "https://fw.example/npm")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]*struct {
			Dist struct{ Tarball string } `json:"dist"`
		} `json:"versions"`
		Time   map[string]string `json:"time"`
		Readme string            `json:"readme"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, ok := got.Versions["1.0.1"]; ok {
		t.Fatal("a version whose key is escaped was kept")
	}
	if _, ok := got.Versions["1.0.2"]; ok || got.Time["1.0.2"] != "" || got.Time["1.0.1"] != "" || got.Time["created"] != "2020" {
		t.Fatalf("blocked versions kept: %s", out)
	}
	if got.DistTags["latest"] != "0.9.0" || got.DistTags["beta"] != "2.0.0-beta.1" || got.DistTags["old"] != "0.9.0" {
		t.Fatalf("dist-tags %v", got.DistTags)
	}
	if got.Versions["0.9.0"].Dist.Tarball != "https://fw.example/npm/evil/-/evil-0.9.0.tgz" || got.Readme != "<b>&</b>" {
		t.Fatalf("%s", out)
	}
	// Every version blocked: the tags go.
	out, err = Rewrite([]byte(`{"name":"@s/x","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"dist":{"tarball":"u/x-1.0.0.tgz"}}}}`), blockedSet("1.0.0"), "@s/x", "B")
	if err != nil || string(out) != `{"name":"@s/x","dist-tags":{},"versions":{}}` {
		t.Fatalf("%s %v", out, err)
	}
	for _, bad := range []string{`[]`, `{"versions":[]}`, `{"versions":{"2.0.0":"x"}}`, `{"versions":{"2.0.0":{"dist":"x"}}}`, `{"a":`, `{"dist-tags":{"a":1},"versions":{"1.0.0":{}}}`} {
		if _, err := Rewrite([]byte(bad), blockedSet("1.0.0"), "x", "B"); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// FuzzRewrite: Rewrite agrees with the reference on every document the
// reference accepts (the same value once decoded), and never keeps a
// blocked version.
func FuzzRewrite(f *testing.F) {
	f.Add([]byte(`{"name":"a","dist-tags":{"latest":"1.0.1"},"versions":{"1.0.0":{"dist":{"tarball":"u/a-1.0.0.tgz"}},"1.0.1":{"dist":{"tarball":"u/a-1.0.1.tgz"}}},"time":{"1.0.1":"t"}}`))
	f.Add([]byte(`{"versions":{"1.0.\u0031":{},"1.0.1":{"dist":{}}},"dist-tags":{"x":"1.0.1"},"name":"\u0061"}`))
	f.Add([]byte(` { "versions" : { "2.0.0" : null , "1.0.1" : { "dist" : { "tarball" : "" } } } } `))
	f.Fuzz(func(t *testing.T, doc []byte) {
		blocked := blockedSet("1.0.1", "2.0.0")
		want, werr := referenceRewrite(doc, blocked, "pkg", "https://fw.example/npm")
		got, gerr := Rewrite(doc, blocked, "pkg", "https://fw.example/npm")
		if gerr != nil {
			if werr == nil && json.Valid(doc) && strings.HasPrefix(strings.TrimSpace(string(doc)), "{") && hasNoDuplicates(doc) {
				t.Fatalf("Rewrite refused what the reference rewrote: %v\n%s", gerr, doc)
			}
			return
		}
		// Keys as npm reads them (JavaScript's JSON.parse): exactly
		// "versions", not encoding/json's case-insensitive match of a
		// struct field ("versionS" is another key, which npm ignores).
		var top map[string]json.RawMessage
		if json.Unmarshal(got, &top) != nil {
			t.Fatalf("not a JSON object: %s", got)
		}
		var versions map[string]json.RawMessage
		if raw, ok := top["versions"]; ok && json.Unmarshal(raw, &versions) != nil {
			t.Fatalf("versions is not an object: %s", got)
		}
		for ver := range versions {
			if blocked(ver) {
				t.Fatalf("blocked %s kept: %s", ver, got)
			}
		}
		if werr == nil && hasNoDuplicates(doc) && !reflect.DeepEqual(decoded(t, got), decoded(t, want)) {
			t.Fatalf("differs from the reference:\n%s\n%s\n(from %s)", got, want, doc)
		}
	})
}

// hasNoDuplicates says whether no object of doc repeats a key (with
// duplicates, the reference reads only the last).
func hasNoDuplicates(doc []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	var stack []map[string]bool
	expectKey := []bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		switch tk := tok.(type) {
		case json.Delim:
			switch tk {
			case '{':
				stack = append(stack, map[string]bool{})
				expectKey = append(expectKey, true)
				continue
			case '[':
				stack = append(stack, nil)
				expectKey = append(expectKey, false)
				continue
			default:
				stack, expectKey = stack[:len(stack)-1], expectKey[:len(expectKey)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1] != nil && expectKey[n-1] {
				if stack[n-1][tk] {
					return false
				}
				stack[n-1][tk] = true
				expectKey[n-1] = false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1] != nil {
			expectKey[n-1] = true
		}
	}
}

// BenchmarkRewrite: a 20 MiB document, 1 version in 100 blocked.
func BenchmarkRewrite(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"name":"big","dist-tags":{"latest":"1.0.0"},"versions":{`)
	for i := range 7000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"1.0.%d":{"version":"1.0.%d","description":%q,"dist":{"tarball":"https://r/big/-/big-1.0.%d.tgz"}}`, i, i, strings.Repeat("x", 2900), i)
	}
	sb.WriteString(`}}`)
	doc := []byte(sb.String())
	blocked := func(v string) bool { return strings.HasSuffix(v, "00") }
	b.SetBytes(int64(len(doc)))
	b.Run("spans", func(b *testing.B) {
		for b.Loop() {
			if _, err := Rewrite(doc, blocked, "big", "https://fw"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("maps", func(b *testing.B) {
		for b.Loop() {
			if _, err := referenceRewrite(doc, blocked, "big", "https://fw"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestHighestRelease(t *testing.T) {
	for _, c := range []struct {
		versions []string
		want     string
	}{
		{[]string{"1.0.0", "1.10.0", "1.9.0", "2.0.0-beta.1"}, "1.10.0"},
		{[]string{"2.0.0-beta.1", "2.0.0-alpha"}, "2.0.0-beta.1"},
		{[]string{"latest", "x"}, ""},
		{nil, ""},
	} {
		if got := highestRelease(c.versions); got != c.want {
			t.Errorf("%v: %q, want %q", c.versions, got, c.want)
		}
	}
}

// TestVersionsNewScripts: a version that adds an install script to the
// one before it by semver (not by publish order) is flagged, once.
func TestVersionsNewScripts(t *testing.T) {
	doc := `{"versions":{
 "1.0.0":{"scripts":{"test":"jest"}},
 "1.0.1":{"scripts":{"test":"jest","postinstall":"node x.js"}},
 "1.0.2":{"scripts":{"postinstall":"node x.js"}},
 "1.0.10":{"scripts":{"postinstall":"node x.js","preinstall":"curl"}},
 "2.0.0-beta":{}
},"time":{"1.0.0":"2026-01-01T00:00:00.000Z","1.0.10":"2026-11-25T10:00:00.000Z"}}`
	got, err := Adapter{}.Versions(firewall.Document{Body: []byte(doc)})
	if err != nil {
		t.Fatal(err)
	}
	flagged := map[string]string{}
	for _, p := range got {
		if p.NewScripts != nil {
			flagged[p.Version] = strings.Join(p.NewScripts, ",") + "<" + p.Previous
		}
		if p.Version == "1.0.10" && p.Time.Format(time.RFC3339) != "2026-11-25T10:00:00Z" {
			t.Fatalf("time of 1.0.10: %s", p.Time)
		}
	}
	if len(flagged) != 2 || flagged["1.0.1"] != "postinstall<1.0.0" || flagged["1.0.10"] != "preinstall<1.0.2" {
		t.Fatalf("flagged %v", flagged)
	}
}
