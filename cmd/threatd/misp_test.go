package main_test

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/core/coretest"
)

// mispRules are MISP's published definitions, kept in plugins/misp/testdata
// (see its README): describeTypes.json, the malicious-package-report object
// template and PyMISP's lax event schema.
type mispRules struct {
	schema   *jsonschema.Schema
	types    map[string]bool
	mappings map[string][]string // category → types
	template struct {
		Name         string   `json:"name"`
		UUID         string   `json:"uuid"`
		Version      int      `json:"version"`
		MetaCategory string   `json:"meta-category"`
		RequiredOne  []string `json:"requiredOneOf"`
		Attributes   map[string]struct {
			Type               string   `json:"misp-attribute"`
			Multiple           bool     `json:"multiple"`
			DisableCorrelation bool     `json:"disable_correlation"`
			SaneDefault        []string `json:"sane_default"`
		} `json:"attributes"`
	}
}

func loadMISPRules(t *testing.T) *mispRules {
	t.Helper()
	dir := filepath.Join("..", "..", "plugins", "misp", "testdata")
	r := &mispRules{types: map[string]bool{}}
	var dt struct {
		Result struct {
			Types    []string            `json:"types"`
			Mappings map[string][]string `json:"category_type_mappings"`
		} `json:"result"`
	}
	read := func(name string, v any) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	read("describeTypes.json", &dt)
	read("malicious-package-report.json", &r.template)
	for _, ty := range dt.Result.Types {
		r.types[ty] = true
	}
	r.mappings = dt.Result.Mappings
	r.schema = coretest.Schema(t, filepath.Join(dir, "schema-lax.json"), false)
	return r
}

var stampRe = regexp.MustCompile(`^[0-9]{9,11}$`)

// mispStats counts what an event holds.
type mispStats struct {
	objects, attributes, withdrawn int
	values                         []string
	types                          map[string]int // of the event's own attributes
}

// check validates one event file field by field and returns what it holds.
func (r *mispRules) check(t *testing.T, raw []byte, st *mispStats) string {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.schema.Validate(inst); err != nil {
		t.Fatalf("the event is not a MISP event (PyMISP's schema): %v\n%.500s", err, raw)
	}
	var f struct {
		Event struct {
			UUID      string `json:"uuid"`
			Date      string `json:"date"`
			Timestamp string `json:"timestamp"`
			Orgc      struct{ Name, UUID string }
			Attribute []map[string]any
			Object    []struct {
				Name            string `json:"name"`
				MetaCategory    string `json:"meta-category"`
				TemplateUUID    string `json:"template_uuid"`
				TemplateVersion string `json:"template_version"`
				UUID            string `json:"uuid"`
				Timestamp       string `json:"timestamp"`
				Attribute       []map[string]any
			} `json:"Object"`
		} `json:"Event"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	e := f.Event
	if _, err := uuid.Parse(e.UUID); err != nil || !stampRe.MatchString(e.Timestamp) || e.Orgc.Name == "" {
		t.Fatalf("event header: %+v", e)
	}
	if _, err := time.Parse("2006-01-02", e.Date); err != nil {
		t.Fatalf("event date %q", e.Date)
	}
	attr := func(a map[string]any, where string) (string, bool) {
		typ, _ := a["type"].(string)
		cat, _ := a["category"].(string)
		val, _ := a["value"].(string)
		id, _ := a["uuid"].(string)
		ts, _ := a["timestamp"].(string)
		if !r.types[typ] || !slices.Contains(r.mappings[cat], typ) || val == "" || !stampRe.MatchString(ts) {
			t.Fatalf("%s: attribute %v: type %q category %q are not a MISP type and one of its categories", where, a, typ, cat)
		}
		if _, err := uuid.Parse(id); err != nil {
			t.Fatalf("%s: attribute uuid %q", where, id)
		}
		withdrawn := false
		if tags, ok := a["Tag"].([]any); ok {
			for _, tg := range tags {
				if tg.(map[string]any)["name"] == "withdrawn" {
					withdrawn = true
				}
			}
		}
		if withdrawn && a["to_ids"] == true {
			t.Fatalf("%s: a withdrawn attribute is still for IDS: %v", where, a)
		}
		st.attributes++
		st.values = append(st.values, val)
		if where == "event" {
			st.types[typ]++
		}
		return val, withdrawn
	}
	for _, a := range e.Attribute {
		if _, w := attr(a, "event"); w {
			st.withdrawn++
		} else if a["to_ids"] != true {
			t.Fatalf("an attribute of a verified report is not for IDS: %v", a)
		}
	}
	tmpl := r.template
	for _, o := range e.Object {
		if o.Name != tmpl.Name || o.TemplateUUID != tmpl.UUID || o.TemplateVersion != strconv.Itoa(tmpl.Version) || o.MetaCategory != tmpl.MetaCategory || !stampRe.MatchString(o.Timestamp) {
			t.Fatalf("object header %+v does not follow the template", o)
		}
		seen := map[string]int{}
		state := ""
		withdrawn := false
		for _, a := range o.Attribute {
			rel, _ := a["object_relation"].(string)
			def, ok := tmpl.Attributes[rel]
			if !ok || a["type"] != def.Type || a["disable_correlation"] != def.DisableCorrelation {
				t.Fatalf("object attribute %v: relation %q is not the template's (%+v)", a, rel, def)
			}
			val, w := attr(a, "object "+o.UUID)
			withdrawn = withdrawn || w
			if len(def.SaneDefault) > 0 && !slices.Contains(def.SaneDefault, val) {
				t.Fatalf("%s %q is not one of the template's values %v", rel, val, def.SaneDefault)
			}
			if seen[rel]++; seen[rel] > 1 && !def.Multiple {
				t.Fatalf("%s given %d times; the template allows one", rel, seen[rel])
			}
			if rel == "state" {
				state = val
			}
		}
		if seen[tmpl.RequiredOne[0]]+seen[tmpl.RequiredOne[1]] == 0 || seen["package-name"] != 1 || seen["ecosystem"] != 1 || seen["report-id"] != 1 {
			t.Fatalf("object %s lacks its identity: %v", o.UUID, seen)
		}
		if (state == "withdrawn") != withdrawn {
			t.Fatalf("object %s: state %q but withdrawn tag %v", o.UUID, state, withdrawn)
		}
		if withdrawn {
			st.withdrawn++
		}
		st.objects++
	}
	return e.UUID
}

// TestMISPFeed: the feed the daemon serves and `threatd export misp`
// writes, checked against MISP's describeTypes.json, the
// malicious-package-report template and PyMISP's event schema; an event's
// timestamp moves when one of its reports changes; the OSV bucket files.
func TestMISPFeed(t *testing.T) {
	t.Parallel()
	rules := loadMISPRules(t)
	in := newInstance(t, quiet)
	tok := in.user("misp@example.com", "--tier", "paid")
	free := in.user("free-misp@example.com")
	dir := t.TempDir()
	for i, eco := range []string{"npm", "PyPI", "npm"} {
		id := fmt.Sprintf("MAL-2024-%d", 7000+i)
		if err := os.WriteFile(filepath.Join(dir, id+".json"), testbin.OSVRecord(id, eco, fmt.Sprintf("misp-imported-%d", i), i*20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in.mustCLI("import", "osv", dir)
	d := in.serve()
	var ids []string
	for _, body := range []string{
		`{"report_type":"package","resource_identifier":"misp-evil","registry":"npm","threat_description":"Steals tokens; posts them to https://exfil.misp-test.example/c","version_info":"1.0.1, 1.0.2"}`,
		`{"report_type":"url","resource_identifier":"https://phish.misp-test.example/login","threat_description":"Phishing page"}`,
		`{"report_type":"domain","resource_identifier":"c2.misp-test.example","threat_description":"C2 server"}`,
		`{"report_type":"ip","resource_identifier":"203.0.113.77","threat_description":"C2 address"}`,
		`{"report_type":"wallet","resource_identifier":"1BoatSLRHtKNngkdXEeobR76b53LETtpyT","threat_description":"Ransom wallet"}`,
		`{"report_type":"repository","resource_identifier":"github.com/misp-bad/stealer","threat_description":"Malware repository"}`,
		`{"report_type":"container","resource_identifier":"misp-bad/miner:1.0","registry":"dockerhub","threat_description":"Cryptominer image"}`,
		`{"report_type":"domain","resource_identifier":"withdrawn.misp-test.example","threat_description":"Was a C2 server"}`,
	} {
		id := d.submit(tok, body)
		in.mustCLI("review", "verify", id)
		ids = append(ids, id)
	}
	in.mustCLI("review", "reject", ids[len(ids)-1], "--note", "a false positive")

	for _, p := range []string{"/misp/manifest.json", "/misp/hashes.csv"} {
		d.do("GET", base+p, free, "").expect(t, 403, "This endpoint requires a paid subscription")
	}
	res := d.raw("GET", base+"/misp/manifest.json", tok)
	var manifest map[string]struct {
		Orgc          struct{ Name, UUID string }
		Info          string `json:"info"`
		Date          string `json:"date"`
		Analysis      int    `json:"analysis"`
		ThreatLevelID int    `json:"threat_level_id"`
		Timestamp     int64  `json:"timestamp"`
	}
	if res.code != 200 || json.Unmarshal(res.body, &manifest) != nil || len(manifest) != 4 {
		t.Fatalf("manifest: %d %s", res.code, res.body)
	}
	st := &mispStats{types: map[string]int{}}
	today := time.Now().UTC().Format("2006-01-02")
	var todays string
	for id, m := range manifest {
		ev := d.raw("GET", base+"/misp/"+id+".json", tok)
		if ev.code != 200 || ev.hdr.Get("Content-Type") != "application/json" {
			t.Fatalf("event %s: %d %s", id, ev.code, ev.body)
		}
		if got := rules.check(t, ev.body, st); got != id {
			t.Fatalf("event %s holds uuid %s", id, got)
		}
		if m.Orgc.Name != "threatd" || m.Analysis != 2 || m.ThreatLevelID != 1 || m.Timestamp == 0 || !strings.Contains(m.Info, m.Date) {
			t.Fatalf("manifest entry %+v", m)
		}
		if m.Date == today {
			todays = id
		}
	}
	// 3 imported package reports (3 days in 2022) and 8 of today: 5 package
	// or container objects, 6 attributes, one of them withdrawn.
	if st.objects != 5 || len(st.types) != 4 || st.types["url"] != 2 || st.types["domain"] != 2 || st.types["ip-dst"] != 1 || st.types["btc"] != 1 || st.withdrawn != 1 {
		t.Fatalf("feed content: %+v", st)
	}
	// hashes.csv: the MD5 of every attribute value.
	h := d.raw("GET", base+"/misp/hashes.csv", tok)
	lines := strings.Split(strings.TrimSpace(string(h.body)), "\n")
	if h.code != 200 || len(lines) != st.attributes {
		t.Fatalf("hashes.csv: %d, %d lines for %d attributes", h.code, len(lines), st.attributes)
	}
	want := map[string]bool{}
	for _, v := range st.values {
		sum := md5.Sum([]byte(v))
		want[hex.EncodeToString(sum[:])] = true
	}
	for _, l := range lines {
		sum, ev, _ := strings.Cut(l, ",")
		if _, ok := manifest[ev]; !ok || !want[sum] {
			t.Fatalf("hashes.csv line %q", l)
		}
	}
	d.do("GET", base+"/misp/"+uuid.NewString()+".json", tok, "").expect(t, 404, "")

	// A change moves the day's event timestamp: MISP fetches it again.
	time.Sleep(1100 * time.Millisecond)
	in.mustCLI("review", "reject", ids[2], "--note", "the domain was sinkholed")
	var after map[string]struct {
		Timestamp int64 `json:"timestamp"`
	}
	eventually(t, "the event's new timestamp", func() bool {
		_ = json.Unmarshal(d.raw("GET", base+"/misp/manifest.json", tok).body, &after)
		return after[todays].Timestamp > manifest[todays].Timestamp
	})
	for id, m := range manifest {
		if id != todays && after[id].Timestamp != m.Timestamp {
			t.Fatalf("event %s of another day changed", id)
		}
	}

	// export misp writes the same feed.
	out := t.TempDir()
	if msg := in.mustCLI("export", "misp", out); !strings.Contains(msg, "11 reports in 4 events") {
		t.Fatalf("export misp: %s", msg)
	}
	b, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	served := d.raw("GET", base+"/misp/manifest.json", tok).body
	if err != nil || string(b) != string(served) {
		t.Fatalf("exported manifest differs from the served one:\n%s\n%s", b, served)
	}
	// The report pages are on the configured address; the daemon under test
	// listens on the one its --listen flag gave.
	site := strings.NewReplacer("https://127.0.0.1:8443/", "SITE/", "https://127.0.0.1:0/", "SITE/")
	for id := range manifest {
		b, err := os.ReadFile(filepath.Join(out, id+".json"))
		if err != nil || site.Replace(string(b)) != site.Replace(string(d.raw("GET", base+"/misp/"+id+".json", tok).body)) {
			t.Fatalf("exported event %s differs: %v\n%s\n%s", id, err, b, d.raw("GET", base+"/misp/"+id+".json", tok).body)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "hashes.csv")); err != nil || strings.Count(string(b), "\n") != strings.Count(string(d.raw("GET", base+"/misp/hashes.csv", tok).body), "\n") {
		t.Fatalf("exported hashes.csv differs: %v", err)
	}

	// OSV's bucket files beside each all.zip.
	eco := d.raw("GET", base+"/osv/ecosystems.txt", tok)
	if eco.code != 200 || !strings.HasPrefix(string(eco.body), "npm\nPyPI\n") {
		t.Fatalf("ecosystems.txt: %d %s", eco.code, eco.body)
	}
	mod := d.raw("GET", base+"/osv/npm/modified_id.csv", tok)
	modLines := strings.Split(strings.TrimSpace(string(mod.body)), "\n")
	if mod.code != 200 || len(modLines) != 3 || !strings.HasSuffix(modLines[0], ",THREATD-"+ids[0]) {
		t.Fatalf("npm modified_id.csv: %d\n%s", mod.code, mod.body)
	}
	var prev time.Time
	for i, l := range modLines {
		stamp, id, _ := strings.Cut(l, ",")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil || id == "" || (i > 0 && at.After(prev)) {
			t.Fatalf("modified_id.csv line %q is not \"<modified>,<id>\" newest first", l)
		}
		prev = at
	}
	if py := d.raw("GET", base+"/osv/pypi/modified_id.csv", tok); py.code != 200 || !strings.HasSuffix(strings.TrimSpace(string(py.body)), ",MAL-2024-7001") {
		t.Fatalf("pypi modified_id.csv: %d %s", py.code, py.body)
	}
	osvDir := t.TempDir()
	in.mustCLI("export", "osv", osvDir)
	if b, err := os.ReadFile(filepath.Join(osvDir, "npm", "modified_id.csv")); err != nil || string(b) != string(mod.body) {
		t.Fatalf("export osv modified_id.csv: %v\n%s", err, b)
	}
	if b, err := os.ReadFile(filepath.Join(osvDir, "ecosystems.txt")); err != nil || string(b) != string(eco.body) {
		t.Fatalf("export osv ecosystems.txt: %v", err)
	}
}
