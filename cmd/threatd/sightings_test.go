package main_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/stix"
	"github.com/threatd/threatd/stix/stixtest"
)

// TestSightings: over real HTTPS, a sighting names a verified report by
// id or by what it names; every bad field is a 400 naming it; a report
// that is not verified is 404; a second false-positive vote is 409; the
// list pages newest first and shows who reported each to reviewers only.
func TestSightings(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	tok := in.user("dev@example.com")
	voter := in.user("voter@example.com", "--name", "Vera Voter")
	reviewer := in.user("rita@example.com", "--role", "reviewer")
	admin := in.user("ada@example.com", "--role", "admin")
	paid := in.user("paid@example.com", "--tier", "paid")
	d := in.serve()
	body := `{"report_type":"package","resource_identifier":"sighted-pkg","registry":"npm","threat_description":"Steals tokens at install time","severity_level":"high"}`
	id := d.submit(tok, body)
	pending := d.submit(tok, strings.Replace(body, "sighted-pkg", "pending-pkg", 1))
	in.mustCLI("review", "verify", id)
	eventually(t, "the report verified", func() bool {
		return d.do("GET", base+"/check-malicious?report_type=package&resource_identifier=sighted-pkg&ecosystem=npm", tok, "").body["malicious"] == true
	})

	post := func(token, body string) response { return d.do("POST", base+"/sightings", token, body) }
	t.Run("bad input", func(t *testing.T) {
		for body, field := range map[string]string{
			`{"threat_id":"` + id + `"}`:                                                           "type",
			`{"threat_id":"` + id + `","type":"liked"}`:                                            "type",
			`{"threat_id":"` + id + `","type":"seen","count":0}`:                                   "count",
			`{"threat_id":"` + id + `","type":"seen","count":1000001}`:                             "count",
			`{"threat_id":"` + id + `","type":"seen","observed_at":"yesterday"}`:                   "observed_at",
			`{"threat_id":"` + id + `","type":"seen","observed_at":"2999-01-01T00:00:00Z"}`:        "observed_at",
			`{"threat_id":"` + id + `","type":"seen","source":"` + strings.Repeat("s", 101) + `"}`: "source",
			`{"threat_id":"` + id + `","type":"seen","source":"firewall"}`:                         "source",
			`{"threat_id":"` + id + `","type":"seen","note":"` + strings.Repeat("n", 2001) + `"}`:  "note",
			`{"type":"seen"}`:                    "threat_id",
			`{"threat_id":"nope","type":"seen"}`: "threat_id",
			`{"threat_id":"` + id + `","report_type":"package","resource_identifier":"x","type":"seen"}`: "threat_id",
			`{"threat_id":"` + id + `","type":"seen","extra":1}`:                                         "extra",
			`{"threat_id":"` + id + `","type":"seen","count":"3"}`:                                       "count",
		} {
			r := post(tok, body)
			if r.code != 400 || !strings.Contains(r.raw, field) {
				t.Errorf("%.80s: %d %s, want 400 naming %s", body, r.code, r.raw, field)
			}
		}
		if r := post(tok, `{"threat_id":"`+pending+`","type":"seen"}`); r.code != 404 {
			t.Errorf("a pending report: %d %s", r.code, r.raw)
		}
		if r := post(tok, `{"report_type":"package","resource_identifier":"never-reported","ecosystem":"npm","type":"seen"}`); r.code != 404 {
			t.Errorf("a resource no report names: %d %s", r.code, r.raw)
		}
		if r := post("", `{"threat_id":"`+id+`","type":"seen"}`); r.code != 401 {
			t.Errorf("anonymous: %d", r.code)
		}
	})

	t.Run("stored and listed", func(t *testing.T) {
		at := time.Now().Add(-time.Hour).UTC()
		for i := range 3 {
			r := post(tok, fmt.Sprintf(`{"threat_id":%q,"type":"seen","source":"edr","count":%d,"observed_at":%q,"note":"on a **build** host"}`, id, i+1, at.Add(time.Duration(i)*time.Minute).Format(time.RFC3339)))
			if r.code != 201 || r.body["sighting_id"] == nil || r.body["threat_id"] != id {
				t.Fatalf("sighting: %d %s", r.code, r.raw)
			}
		}
		if r := post(voter, `{"report_type":"package","resource_identifier":"sighted-pkg","ecosystem":"npm","type":"false_positive","note":"it is our own package"}`); r.code != 201 || r.body["threat_id"] != id {
			t.Fatalf("a vote by what the report names: %d %s", r.code, r.raw)
		}
		if r := post(voter, `{"threat_id":"`+id+`","type":"false_positive"}`); r.code != 409 {
			t.Fatalf("a second vote: %d %s", r.code, r.raw)
		}
		var seen []map[string]any
		cursor := ""
		for {
			q := base + "/threats/" + id + "/sightings?limit=2"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			r := d.do("GET", q, tok, "")
			if r.code != 200 {
				t.Fatalf("list: %d %s", r.code, r.raw)
			}
			for _, s := range r.body["sightings"].([]any) {
				seen = append(seen, s.(map[string]any))
			}
			next, _ := r.body["next_cursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		if len(seen) != 4 || seen[0]["type"] != "false_positive" || seen[3]["count"] != 1.0 || seen[1]["note"] != "on a **build** host" {
			t.Fatalf("listed: %+v", seen)
		}
		for _, s := range seen {
			if _, ok := s["user_id"]; ok {
				t.Fatalf("a submitter sees who reported a sighting: %+v", s)
			}
		}
		// A reviewer sees who reported each by public name, an
		// administrator by e-mail too.
		r := d.do("GET", base+"/threats/"+id+"/sightings", reviewer, "")
		if r.code != 200 || !strings.Contains(r.raw, `"user_id"`) || !strings.Contains(r.raw, `"user_name":"Vera Voter"`) ||
			strings.Contains(r.raw, "@example.com") {
			t.Fatalf("a reviewer's list: %d %s", r.code, r.raw)
		}
		r = d.do("GET", base+"/threats/"+id+"/sightings", admin, "")
		if r.code != 200 || !strings.Contains(r.raw, `"user_email":"voter@example.com"`) ||
			!strings.Contains(r.raw, `"user_email":"dev@example.com"`) {
			t.Fatalf("an administrator's list: %d %s", r.code, r.raw)
		}
		for _, p := range []string{"/threats/" + pending + "/sightings", "/threats/nope/sightings"} {
			if r := d.do("GET", base+p, tok, ""); r.code != 404 {
				t.Errorf("%s: %d", p, r.code)
			}
		}
		if r := d.do("GET", base+"/threats/"+id+"/sightings?cursor=bm9wZQ", tok, ""); r.code != 400 {
			t.Errorf("a bad cursor: %d", r.code)
		}
	})

	t.Run("scans add seen sightings, one row a day", func(t *testing.T) {
		lock := `{"name":"app","lockfileVersion":3,"requires":true,"packages":{"":{"name":"app"},"node_modules/sighted-pkg":{"version":"1.0.0"}}}`
		for range 5 {
			if r := d.do("POST", base+"/scan?format=package-lock.json", tok, lock); r.code != 200 || r.body["count"] != 1.0 {
				t.Fatalf("scan: %d %s", r.code, r.raw)
			}
		}
		eventually(t, "the scan's sightings written", func() bool {
			r := d.do("GET", base+"/threats/"+id+"/sightings", tok, "")
			for _, s := range r.body["sightings"].([]any) {
				m := s.(map[string]any)
				if m["source"] == "scan" && m["automatic"] == true && m["count"] == 5.0 {
					return true
				}
			}
			return false
		})
	})

	t.Run("counts in every record and format", func(t *testing.T) {
		// 1+2+3 seen by the submitter (counted, not weighed) and 5 by
		// scans (one automatic row, weighing 5); one false-positive vote;
		// a submitter with one verified report.
		wantConfidence := float64(core.Confidence(core.ConfidenceInput{Seen: 5, Votes: 1, Record: core.SubmitterRecord{Verified: 1}.Score()}))
		counts := func(where string, rec map[string]any) bool {
			s, _ := rec["sightings"].(map[string]any)
			if s == nil || s["seen"] != 11.0 || s["false_positive"] != 1.0 || s["expired"] != 0.0 || s["last_seen"] == nil {
				return false
			}
			if rec["confidence"] != wantConfidence || rec["disputed"] != false || rec["campaigns"] == nil {
				t.Fatalf("%s: confidence %v (want %v), disputed %v, campaigns %v", where, rec["confidence"], wantConfidence, rec["disputed"], rec["campaigns"])
			}
			return true
		}
		check := "/check-malicious?report_type=package&resource_identifier=sighted-pkg&ecosystem=npm"
		// Counted at once by the daemon that stored them; the submitter's
		// record within the records' refresh.
		apitest.Eventually(t, "the counts and confidence in check-malicious", 10*time.Second, func() bool {
			details, _ := d.do("GET", base+check, paid, "").body["details"].(map[string]any)
			return details != nil && details["confidence"] == wantConfidence && counts("check", details)
		})
		// The reviewer's record is rendered from the report, not the index's copy.
		if details, _ := d.do("GET", base+check, reviewer, "").body["details"].(map[string]any); !counts("check as a reviewer", details) {
			t.Errorf("a reviewer's check: %v", details)
		}
		r := d.do("POST", base+"/check-malicious", paid, `{"queries":[{"report_type":"package","resource_identifier":"sighted-pkg","ecosystem":"npm"}]}`)
		if res, _ := r.body["results"].([]any); len(res) != 1 || !counts("batch", res[0].(map[string]any)["details"].(map[string]any)) {
			t.Errorf("batch check: %s", r.raw)
		}
		if r := d.do("GET", "/threats/"+id+".json", "", ""); r.code != 200 || !counts("public JSON", r.body) {
			t.Errorf("public JSON: %d %s", r.code, r.raw)
		}
		if r := d.do("GET", base+"/query-latest", paid, ""); r.code != 200 || !counts("query-latest", r.body["threats"].([]any)[0].(map[string]any)) {
			t.Errorf("query-latest: %d %.300s", r.code, r.raw)
		}

		// STIX: the malware's confidence and a sighting of it, valid.
		v := stixtest.Optional(t)
		res := d.raw("GET", base+"/query-latest-stix", paid)
		if res.code != 200 {
			t.Fatalf("STIX: %d %s", res.code, res.body)
		}
		v.Validate(t, res.body)
		var bundle struct{ Objects []map[string]any }
		if err := json.Unmarshal(res.body, &bundle); err != nil {
			t.Fatal(err)
		}
		var malware, sighting map[string]any
		for _, o := range bundle.Objects {
			switch o["type"] {
			case "malware":
				malware = o
			case "sighting":
				sighting = o
			}
		}
		if malware == nil || malware["confidence"] != wantConfidence || sighting == nil || sighting["sighting_of_ref"] != malware["id"] ||
			sighting["count"] != 11.0 || sighting["last_seen"] == nil {
			t.Fatalf("STIX malware %v\nsighting %v", malware, sighting)
		}
		ext := sighting["extensions"].(map[string]any)[stix.SightingExtension].(map[string]any)
		if ext["false_positive"] != 1.0 || ext["expired"] != 0.0 || ext["disputed"] != false {
			t.Errorf("STIX sighting types: %v", ext)
		}

		// MISP: a Sighting of each type the report has, on its package-name.
		res = d.raw("GET", base+"/misp/manifest.json", paid)
		var manifest map[string]any
		if res.code != 200 || json.Unmarshal(res.body, &manifest) != nil || len(manifest) != 1 {
			t.Fatalf("MISP manifest: %d %s", res.code, res.body)
		}
		for event := range manifest {
			raw := d.raw("GET", base+"/misp/"+event+".json", paid)
			loadMISPRules(t).check(t, raw.body, &mispStats{types: map[string]int{}})
			var f struct {
				Event struct {
					Object []struct {
						Attribute []struct {
							ObjectRelation string `json:"object_relation"`
							Sighting       []map[string]any
						}
					}
				}
			}
			if err := json.Unmarshal(raw.body, &f); err != nil || len(f.Event.Object) != 1 {
				t.Fatalf("MISP event: %v %s", err, raw.body)
			}
			types := map[string]string{}
			for _, a := range f.Event.Object[0].Attribute {
				for _, s := range a.Sighting {
					if a.ObjectRelation != "package-name" {
						t.Errorf("a sighting on %s", a.ObjectRelation)
					}
					types[s["type"].(string)] = s["source"].(string)
				}
			}
			if len(types) != 2 || types["0"] != "threatd: seen 11 times" || types["1"] != "threatd: false positive 1 times" {
				t.Errorf("MISP sightings: %v", types)
			}
		}
	})
}
