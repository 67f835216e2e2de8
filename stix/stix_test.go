package stix

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
	"github.com/threatd/threatd/stix/stixtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func at(s string) *time.Time {
	t, _ := time.Parse(time.RFC3339, s)
	return &t
}

// sample is a realistic record with every kind of indicator.
func sample() Record {
	th := core.Threat{
		ID: "5b0c7e5e-8f0f-4a55-9a52-2b1f0a8d3c11", ReportType: core.TypePackage, ResourceIdentifier: "evil-pkg", Registry: "npm",
		Status: core.StatusVerified, CreatedAt: *at("2026-11-01T10:00:00Z"), UpdatedAt: *at("2026-11-01T10:00:00Z"),
		VerifiedAt: at("2026-11-02T09:30:00Z"), VerifiedBy: "Rita",
		Details: core.Details{
			ThreatDescription: "Postinstall script steals npm tokens",
			PayloadDescription: "Posts ~/.npmrc to hxxps://exfil[.]evil[.]example/c from 203[.]0[.]113[.]7 and 2001:db8::7; " +
				"drops 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 (md5 d41d8cd98f00b204e9800998ecf8427e, " +
				"sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709); ransom to 0xabcdef0123456789abcdef0123456789abcdef01",
			SeverityLevel: core.SeverityCritical, Tags: []string{"token-stealer", "campaign-x"}, VersionInfo: "1.0.3, 1.0.4",
			EvidenceReferences: "https://blog.example/evil-pkg", OSVAdvisoryURL: "https://osv.dev/vulnerability/MAL-2026-1",
			FirstSeen: at("2026-10-30T00:00:00Z"),
		},
	}
	return core.NewExportRecord(core.Derive(th), core.BaseCommunity(th))
}

// What the community says goes in as the malware's confidence, a sighting
// of it and an opinion: valid STIX, the malware modified when it changed,
// the same objects for the same signals, none for a withdrawn report.
func TestCommunityObjects(t *testing.T) {
	v := stixtest.Optional(t)
	r := sample()
	changed := *at("2026-11-20T08:00:00Z")
	r.Community = core.Community{Confidence: 37, Disputed: true, ChangedAt: changed,
		Sightings: core.SightingCounts{Seen: 1234, FalsePositive: 3, Expired: 1, LastSeen: *at("2026-11-19T23:59:00Z"), UpdatedAt: changed}}
	b, err := NewBundle([]Record{r}, Options{BundleKey: "test"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	v.Validate(t, b)
	byType := map[string]Object{}
	for _, o := range RecordObjects(r, "threatd") {
		byType[o["type"].(string)] = o
	}
	m, s := byType["malware"], byType["sighting"]
	if m["confidence"] != 37 || m["modified"] != "2026-11-20T08:00:00.000Z" {
		t.Errorf("malware confidence %v modified %v", m["confidence"], m["modified"])
	}
	if s == nil || s["sighting_of_ref"] != m["id"] || s["count"] != int64(1234) || s["last_seen"] != "2026-11-19T23:59:00.000Z" ||
		s["modified"] != "2026-11-20T08:00:00.000Z" || s["created"] != m["created"] {
		t.Errorf("sighting %v", s)
	}
	ext, _ := s["extensions"].(map[string]any)[SightingExtension].(map[string]any)
	if ext["false_positive"] != int64(3) || ext["expired"] != int64(1) || ext["disputed"] != true ||
		!strings.Contains(s["description"].(string), "a false positive 3 times, no longer active once") {
		t.Errorf("sighting types %v: %s", ext, s["description"])
	}
	again := RecordObjects(r, "threatd")
	if a, _ := json.Marshal(again); !bytes.Equal(a, mustJSON(t, RecordObjects(r, "threatd"))) {
		t.Error("the same signals gave different objects")
	}
	r.Community.Sightings = core.SightingCounts{}
	for _, o := range RecordObjects(r, "threatd") {
		if o["type"] == "sighting" {
			t.Errorf("a sighting without sightings: %v", o)
		}
	}
	// Campaigns: a campaign object and the malware attributed to it, the
	// campaign once in a bundle of two of its reports.
	r.Community.Campaigns = []core.CampaignRef{{ID: "8d1c4f7e-0a3b-4c5d-9e6f-7a8b9c0d1e2f", Name: "Shai-Hulud", Description: "An npm worm",
		CreatedAt: *at("2026-09-15T00:00:00Z"), UpdatedAt: *at("2026-09-16T00:00:00Z")}}
	other := r
	other.Threat.ID = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
	b, err = NewBundle([]Record{r, other}, Options{BundleKey: "campaign"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	v.Validate(t, b)
	camps, rels := 0, 0
	for _, o := range bundleObjects(t, b) {
		switch {
		case o["type"] == "campaign":
			camps++
			if o["name"] != "Shai-Hulud" || o["modified"] != "2026-09-16T00:00:00.000Z" {
				t.Errorf("campaign %v", o)
			}
		case o["relationship_type"] == "attributed-to":
			rels++
		}
	}
	if camps != 1 || rels != 2 {
		t.Errorf("%d campaign objects and %d attributed-to relationships, want 1 and 2", camps, rels)
	}
	r.Threat.Status = core.StatusRejected
	for _, o := range RecordObjects(r, "threatd") {
		if o["type"] == "sighting" || o["type"] == "campaign" || o["confidence"] != nil && o["type"] == "malware" {
			t.Errorf("a withdrawn report's %s carries community signals: %v", o["type"], o)
		}
	}
}

// bundleObjects decodes a bundle's objects.
func bundleObjects(t *testing.T, body []byte) []Object {
	t.Helper()
	var b struct {
		Objects []Object `json:"objects"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	return b.Objects
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBundleValidatesAndIsDeterministic(t *testing.T) {
	v := stixtest.Optional(t)
	b1, err := NewBundle([]Record{sample()}, Options{BundleKey: "test"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	v.Validate(t, b1)
	b2, _ := NewBundle([]Record{sample()}, Options{BundleKey: "test"}).Marshal()
	if !bytes.Equal(b1, b2) {
		t.Fatal("the same records gave a different bundle")
	}
	counts := map[string]int{}
	for _, o := range bundleObjects(t, b1) {
		counts[o["type"].(string)]++
		_, u, _ := strings.Cut(o["id"].(string), "--")
		if id := uuid.MustParse(u); id.Version() != 5 && o["id"] != TLPWhite {
			t.Fatalf("%s: id is not a UUIDv5", o["id"])
		}
		if o["type"] != "marking-definition" && o["type"] != "identity" && o["created_by_ref"] != IdentityID("threatd") {
			t.Fatalf("%s without created_by_ref", o["id"])
		}
		if o["type"] == "indicator" && (o["name"] == "" || o["name"] == nil || o["description"] == "" || o["description"] == nil) {
			t.Fatalf("%s: an indicator without a name or description (the validator's SHOULD)", o["id"])
		}
	}
	iocs := len(sample().IOCs)
	if counts["malware"] != 1 || counts["indicator"] != iocs || counts["relationship"] != iocs || counts["identity"] != 1 || counts["marking-definition"] != 1 || iocs < 8 {
		t.Fatalf("objects %v for %d IOCs", counts, iocs)
	}
	// Golden file: input and expected bundle side by side.
	golden := filepath.Join("testdata", "bundle.golden.json")
	if *update {
		os.WriteFile(golden, b1, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./stix -update to create it)", err)
	}
	if !bytes.Equal(b1, want) {
		t.Fatalf("bundle differs from %s (go test ./stix -update rewrites it after review)", golden)
	}
}

// A report stored before derived ids (LegacySTIXIDs) keeps the ids its
// objects were first published with; a later one has ids that name it.
func TestObjectIDsFollowTheReportsScheme(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		r := sample()
		r.Threat.LegacySTIXIDs = legacy
		objs := RecordObjects(r, "threatd")
		ids := core.STIXIDsOf(r.Threat.ID, legacy)
		want := map[string]bool{ids.Malware(): true}
		for _, x := range r.IOCs {
			want[ids.Indicator(x)], want[ids.Relationship(x)] = true, true
		}
		for _, o := range objs {
			id := o["id"].(string)
			if !want[id] {
				t.Fatalf("legacy %v: object %s is not one of the report's", legacy, id)
			}
			if _, u, _ := strings.Cut(id, "--"); strings.HasPrefix(u, r.Threat.ID[:13]) == legacy {
				t.Fatalf("legacy %v: %s", legacy, id)
			}
		}
		if malware := objs[0]["id"]; legacy && malware != core.STIXID("malware", r.Threat.ID) {
			t.Fatalf("legacy malware id %s", malware)
		}
	}
}

func TestPatterns(t *testing.T) {
	cases := []struct {
		ioc  ioc.IOC
		want string
	}{
		{ioc.IOC{Type: "url", Value: "https://evil.example/a?b=1"}, `[url:value = 'https://evil.example/a?b=1']`},
		{ioc.IOC{Type: "domain", Value: "evil.example"}, `[domain-name:value = 'evil.example']`},
		{ioc.IOC{Type: "ip", Value: "203.0.113.7", Detail: "ipv4"}, `[ipv4-addr:value = '203.0.113.7']`},
		{ioc.IOC{Type: "ip", Value: "2001:db8::7", Detail: "ipv6"}, `[ipv6-addr:value = '2001:db8::7']`},
		{ioc.IOC{Type: "hash", Value: "d41d8cd98f00b204e9800998ecf8427e", Detail: "md5"}, `[file:hashes.'MD5' = 'd41d8cd98f00b204e9800998ecf8427e']`},
		{ioc.IOC{Type: "hash", Value: strings.Repeat("a", 40), Detail: "sha1"}, `[file:hashes.'SHA-1' = '` + strings.Repeat("a", 40) + `']`},
		{ioc.IOC{Type: "hash", Value: strings.Repeat("b", 64)}, `[file:hashes.'SHA-256' = '` + strings.Repeat("b", 64) + `']`},
		{ioc.IOC{Type: "package", Value: "@scope/evil", Detail: "npm"}, `[software:name = '@scope/evil' AND software:vendor = 'npm']`},
		{ioc.IOC{Type: "package", Value: "evil-pkg", Detail: "npm", Versions: []string{"1.0.0", "1.0.1"}},
			`[software:name = 'evil-pkg' AND software:vendor = 'npm' AND software:version IN ('1.0.0', '1.0.1')]`},
		{ioc.IOC{Type: "package", Value: "docker.io/evil/img:1", Detail: "container"}, `[software:name = 'docker.io/evil/img:1' AND software:vendor = 'container']`},
		{ioc.IOC{Type: "wallet", Value: "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"}, `[cryptocurrency-wallet:value = 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq']`},
	}
	for _, c := range cases {
		if got, ok := Pattern(c.ioc); !ok || got != c.want {
			t.Errorf("%+v: %q, want %q", c.ioc, got, c.want)
		}
	}
}

// lex splits a pattern into its string literals (unescaped) and the text
// outside them, as a STIX pattern parser would.
func lex(t *testing.T, p string) (outside string, literals []string) {
	var b, lit strings.Builder
	in := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case !in && c == '\'':
			in = true
			lit.Reset()
		case in && c == '\\':
			i++
			if i >= len(p) || (p[i] != '\\' && p[i] != '\'') {
				t.Fatalf("bad escape in %q", p)
			}
			lit.WriteByte(p[i])
		case in && c == '\'':
			in = false
			literals = append(literals, lit.String())
			b.WriteString("'L'")
		case in:
			lit.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	if in {
		t.Fatalf("unterminated literal in %q", p)
	}
	return b.String(), literals
}

// TestHostileValuesCannotChangeThePattern: quotes, backslashes and brackets
// stay inside the literal; the pattern keeps exactly its one comparison.
func TestHostileValuesCannotChangeThePattern(t *testing.T) {
	hostile := []string{
		`evil.example' OR [domain-name:value = 'x`,
		`https://evil.example/a'] OR [url:value = '`,
		`x\' OR 1=1 --`,
		`back\slash\\`,
		`it's ]][[ '' \'`,
		`'`,
		`\`,
	}
	for _, typ := range []string{"url", "domain", "package", "wallet"} {
		for _, v := range hostile {
			p, _ := Pattern(ioc.IOC{Type: typ, Value: v, Detail: "npm"})
			outside, lits := lex(t, p)
			if lits[0] != v {
				t.Fatalf("%s %q: literal reads back as %q", typ, v, lits[0])
			}
			want := map[string]string{"url": "[url:value = 'L']", "domain": "[domain-name:value = 'L']",
				"package": "[software:name = 'L' AND software:vendor = 'L']", "wallet": "[cryptocurrency-wallet:value = 'L']"}[typ]
			if outside != want {
				t.Fatalf("%s %q: pattern structure %q, want %q (pattern %s)", typ, v, outside, want, p)
			}
		}
	}
}

// TestValidatorRejectsInvalidObjects proves the schema check is not vacuous.
func TestValidatorRejectsInvalidObjects(t *testing.T) {
	v := stixtest.Required(t)
	b := NewBundle([]Record{sample()}, Options{})
	for _, breakIt := range []func(Object){
		func(o Object) { delete(o, "is_family") },
		func(o Object) { o["id"] = "malware--not-a-uuid" },
		func(o Object) { o["created"] = "yesterday" },
	} {
		raw, _ := json.Marshal(b)
		var doc map[string]any
		json.Unmarshal(raw, &doc)
		for _, o := range doc["objects"].([]any) {
			if obj := o.(map[string]any); obj["type"] == "malware" {
				breakIt(obj)
				if err := v.ValidateObject(obj); err == nil {
					t.Fatalf("invalid malware object accepted: %v", obj)
				}
			}
		}
	}
}

// A revision publishes the same objects (same ids) with "modified"
// advanced; a withdrawal publishes them once more with "revoked": true.
// Every version validates against the OASIS schemas.
func TestRevisionsAndWithdrawalsAreNewVersions(t *testing.T) {
	v := stixtest.Optional(t)
	objects := func(r Record) map[string]Object {
		body, err := NewBundle([]Record{r}, Options{BundleKey: "versions"}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		v.Validate(t, body)
		out := map[string]Object{}
		for _, o := range bundleObjects(t, body) {
			if o["type"] != "identity" && o["type"] != "marking-definition" && o["type"] != "extension-definition" {
				out[o["id"].(string)] = o
			}
		}
		return out
	}
	first := sample()
	revised := sample()
	revised.Threat.Details.SeverityLevel = core.SeverityHigh
	revised.Threat.UpdatedAt = *at("2026-11-05T08:00:00Z")
	revised.Threat.Version = 2
	withdrawn := revised
	withdrawn.Threat.Status = core.StatusRejected
	withdrawn.Threat.UpdatedAt = *at("2026-11-06T08:00:00Z")
	v1, v2, v3 := objects(first), objects(revised), objects(withdrawn)
	if len(v1) == 0 || len(v1) != len(v2) || len(v2) != len(v3) {
		t.Fatalf("objects: %d, %d, %d", len(v1), len(v2), len(v3))
	}
	for id, o1 := range v1 {
		o2, o3 := v2[id], v3[id]
		if o2 == nil || o3 == nil {
			t.Fatalf("%s missing from a later version", id)
		}
		if o1["created"] != o2["created"] || o2["created"] != o3["created"] {
			t.Errorf("%s: created changed across versions", id)
		}
		if !(o1["modified"].(string) < o2["modified"].(string) && o2["modified"].(string) < o3["modified"].(string)) {
			t.Errorf("%s: modified %v, %v, %v does not advance", id, o1["modified"], o2["modified"], o3["modified"])
		}
		if o1["revoked"] != nil || o2["revoked"] != nil || o3["revoked"] != true {
			t.Errorf("%s: revoked %v, %v, %v; want only the withdrawal revoked", id, o1["revoked"], o2["revoked"], o3["revoked"])
		}
	}
}

// TestNoCustomProperties: no object carries a property its OASIS schema
// does not define (the OASIS validator warned {401} on x_threatd_origin on
// every indicator); the indicator's origin is a property extension whose
// definition is among the bundle's objects. A custom property is caught
// (positive control).
func TestNoCustomProperties(t *testing.T) {
	v := stixtest.Required(t)
	body, err := NewBundle([]Record{sample()}, Options{BundleKey: "test"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	objects := bundleObjects(t, body)
	defs, withOrigin := 0, 0
	for _, o := range objects {
		if custom := v.CustomProperties(o); len(custom) > 0 {
			t.Errorf("%s %s: custom properties %v", o["type"], o["id"], custom)
		}
		if o["type"] == "extension-definition" && o["id"] == OriginExtension {
			defs++
		}
		if ext, ok := o["extensions"].(map[string]any); ok {
			e := ext[OriginExtension].(map[string]any)
			if e["extension_type"] != "property-extension" || e["origin"] == "" {
				t.Errorf("%s: extension %v", o["id"], e)
			}
			withOrigin++
		}
	}
	if defs != 1 || withOrigin == 0 {
		t.Fatalf("%d extension definitions, %d indicators with an origin", defs, withOrigin)
	}
	ind := Object{}
	for _, o := range objects {
		if o["type"] == "indicator" {
			maps.Copy(ind, o)
			break
		}
	}
	ind["x_threatd_origin"] = "asset"
	if custom := v.CustomProperties(ind); len(custom) != 1 || custom[0] != "x_threatd_origin" {
		t.Fatalf("custom property not caught: %v", custom)
	}
}
