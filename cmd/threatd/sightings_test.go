package main_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSightings: over real HTTPS, a sighting names a verified report by
// id or by what it names; every bad field is a 400 naming it; a report
// that is not verified is 404; a second false-positive vote is 409; the
// list pages newest first and shows who reported each to reviewers only.
func TestSightings(t *testing.T) {
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	tok := in.user("dev@example.com")
	voter := in.user("voter@example.com")
	reviewer := in.user("rita@example.com", "--role", "reviewer")
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
		r := d.do("GET", base+"/threats/"+id+"/sightings", reviewer, "")
		if r.code != 200 || !strings.Contains(r.raw, `"user_id"`) {
			t.Fatalf("a reviewer's list: %d %s", r.code, r.raw)
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
}
