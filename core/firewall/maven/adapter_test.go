package maven

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

func TestParse(t *testing.T) {
	for path, want := range map[string]Request{
		"org/example/lib/maven-metadata.xml":                {Kind: Metadata, Group: "org.example", Artifact: "lib", Path: "org/example/lib/maven-metadata.xml"},
		"org/example/lib/maven-metadata.xml.sha256":         {Kind: Metadata, Group: "org.example", Artifact: "lib", Checksum: ".sha256", Path: "org/example/lib/maven-metadata.xml"},
		"org/example/lib/1.0/lib-1.0.jar":                   {Kind: File, Group: "org.example", Artifact: "lib", Version: "1.0", Path: "org/example/lib/1.0/lib-1.0.jar"},
		"org/example/lib/1.0/lib-1.0-sources.jar.sha1":      {Kind: File, Group: "org.example", Artifact: "lib", Version: "1.0", Path: "org/example/lib/1.0/lib-1.0-sources.jar.sha1"},
		"org/example/lib/1.0-SNAPSHOT/maven-metadata.xml":   {Kind: File, Group: "org.example", Artifact: "lib", Version: "1.0-SNAPSHOT", Path: "org/example/lib/1.0-SNAPSHOT/maven-metadata.xml"},
		"org/example/lib/1.0-SNAPSHOT/lib-1.0-20260101.jar": {Kind: File, Group: "org.example", Artifact: "lib", Version: "1.0-SNAPSHOT", Path: "org/example/lib/1.0-SNAPSHOT/lib-1.0-20260101.jar"},
	} {
		got, ok, err := Parse(path)
		if err != nil || !ok || got != want {
			t.Errorf("Parse(%q) = %+v %v %v, want %+v", path, got, ok, err, want)
		}
	}
	for _, path := range []string{"maven-metadata.xml", "lib/maven-metadata.xml", "org/example/lib/1.0/other-1.0.jar", "a/b"} {
		if _, ok, err := Parse(path); ok || err != nil {
			t.Errorf("Parse(%q): %v %v, want an unknown path", path, ok, err)
		}
	}
	for _, path := range []string{"org/../lib/maven-metadata.xml", "org/%2e%2e/lib/1/lib-1.jar", "org//lib/maven-metadata.xml", "org/ex%2flib/maven-metadata.xml"} {
		var u *firewall.Unjudgeable
		if _, _, err := Parse(path); !errors.As(err, &u) {
			t.Errorf("Parse(%q): %v, want unjudgeable", path, err)
		}
	}
}

const meta = `<?xml version="1.0" encoding="UTF-8"?>
<metadata>
  <groupId>org.example</groupId>
  <artifactId>lib</artifactId>
  <versioning>
    <latest>2.0</latest>
    <release>2.0</release>
    <versions>
      <version>1.0</version>
      <version>1.1-SNAPSHOT</version>
      <version>2.0</version>
    </versions>
    <lastUpdated>20260101000000</lastUpdated>
  </versioning>
</metadata>
`

func TestRewrite(t *testing.T) {
	judge := func(v string) (bool, string) { return v == "2.0", "bad" }
	doc := firewall.Document{Body: []byte(meta), Name: "org.example:lib"}
	r, err := Adapter{}.Rewrite(doc, judge, "B")
	if err != nil {
		t.Fatal(err)
	}
	got := string(r.Body)
	if strings.Contains(got, "<version>2.0</version>") || !strings.Contains(got, "<latest>1.1-SNAPSHOT</latest>") || !strings.Contains(got, "<release>1.0</release>") ||
		!strings.Contains(got, "<version>1.0</version>\n      <version>1.1-SNAPSHOT</version>\n    </versions>") {
		t.Fatalf("rewrite:\n%s", got)
	}
	sum, err := Adapter{}.Derive(r.Body, ".sha1")
	want := sha1.Sum(r.Body)
	if err != nil || string(sum.Body) != hex.EncodeToString(want[:]) {
		t.Fatalf("sha1 %s %v", sum.Body, err)
	}
	if _, err := (Adapter{}).Derive(r.Body, ".crc"); err == nil {
		t.Fatal("an unknown checksum")
	}
	clean, _ := Adapter{}.Rewrite(firewall.Document{Body: []byte(meta)}, func(string) (bool, string) { return false, "" }, "B")
	if string(clean.Body) != meta {
		t.Fatal("a document with nothing refused is served as it is")
	}
	// Written with an entity, as CDATA, or with white space inside: read
	// as Maven reads it, and dropped all the same.
	for _, spelled := range []string{"2.&#48;", "<![CDATA[2.0]]>", "\n        2.0\n      ", "&#x32;.0"} {
		doc := firewall.Document{Body: []byte(strings.Replace(meta, "<version>2.0</version>", "<version>"+spelled+"</version>", 1))}
		r, err := Adapter{}.Rewrite(doc, judge, "B")
		if err != nil || strings.Contains(string(r.Body), spelled) || !strings.Contains(string(r.Body), "<version>1.0</version>\n      <version>1.1-SNAPSHOT</version>\n    </versions>") ||
			!strings.Contains(string(r.Body), "<latest>1.1-SNAPSHOT</latest>") {
			t.Errorf("%q: %s %v", spelled, r.Body, err)
		}
	}
	// A <version> outside <versions> (a snapshot's own metadata) is not
	// a listed version.
	snap := strings.Replace(meta, "<groupId>", "<version>2.0</version>\n  <groupId>", 1)
	if r, err := (Adapter{}).Rewrite(firewall.Document{Body: []byte(snap)}, judge, "B"); err != nil || !strings.Contains(string(r.Body), "<version>2.0</version>\n  <groupId>") {
		t.Errorf("a version outside versions: %s %v", r.Body, err)
	}
	for _, bad := range []string{"<metadata><versioning>", "not xml", strings.Repeat("<a>", 100000)} {
		if _, err := (Adapter{}).Rewrite(firewall.Document{Body: []byte(bad)}, judge, "B"); err == nil {
			t.Errorf("%.20q: no error", bad)
		}
	}
}
