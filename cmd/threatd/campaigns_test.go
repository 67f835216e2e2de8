package main_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/threatd/threatd/stix/stixtest"
)

// TestCampaigns: over real HTTPS, reviewers make and change campaigns
// (anyone else is refused), with every bad field a 400 naming it; any
// token reads them, paged; a report's record names its campaigns, STIX
// carries a campaign attributed from the malware, MISP tags the event;
// the public page lists its reports; the CLI does the same; suggestions
// find the reports that share an indicator, a campaign tag and a text.
func TestCampaigns(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	tok := in.user("dev@example.com")
	reviewer := in.user("rita@example.com", "--role", "reviewer")
	paid := in.user("paid@example.com", "--tier", "paid")
	d := in.serve()
	payload := "The install script reads the npm token from the user's npmrc file, publishes a new patch version of every package " +
		"the token can write with itself added, and posts the token to hxxps://collect[.]worm-c2[.]example/t as JSON."
	var ids []string
	for i := range 3 {
		id := d.submit(tok, fmt.Sprintf(`{"report_type":"package","resource_identifier":"wormy-%d","registry":"npm","threat_description":"Self-spreading worm","payload_description":%q,"tags":["campaign:wormy"]}`, i, payload))
		in.mustCLI("review", "verify", id)
		ids = append(ids, id)
	}
	pending := d.submit(tok, `{"report_type":"package","resource_identifier":"wormy-pending","registry":"npm","threat_description":"not yet"}`)
	check := func(i int) map[string]any {
		det, _ := d.do("GET", base+fmt.Sprintf("/check-malicious?report_type=package&resource_identifier=wormy-%d&ecosystem=npm", i), paid, "").body["details"].(map[string]any)
		return det
	}
	eventually(t, "the reports verified", func() bool { return check(2) != nil })

	body := fmt.Sprintf(`{"name":"Wormy","description":"A **worm** of npm tokens","tags":["worm"],"threat_ids":[%q,%q]}`, ids[0], ids[1])
	d.do("POST", base+"/campaigns", tok, body).expect(t, 403, "Only reviewers and administrators may change campaigns")
	for bad, field := range map[string]string{
		`{"description":"x"}`:                              "name",
		`{"name":"  "}`:                                    "name",
		`{"name":"x","tags":[""]}`:                         "tags",
		`{"name":"x","threat_ids":["nope"]}`:               "threat_ids",
		`{"name":"x","extra":1}`:                           "extra",
		`{"name":"x","add_threat_ids":["` + ids[0] + `"]}`: "threat_ids",
	} {
		if r := d.do("POST", base+"/campaigns", reviewer, bad); r.code != 400 || !strings.Contains(r.raw, field) {
			t.Errorf("%s: %d %s, want 400 naming %s", bad, r.code, r.raw, field)
		}
	}
	if r := d.do("POST", base+"/campaigns", reviewer, `{"name":"x","threat_ids":["`+pending+`"]}`); r.code != 404 {
		t.Errorf("a pending report: %d %s", r.code, r.raw)
	}
	r := d.do("POST", base+"/campaigns", reviewer, body)
	if r.code != 201 || r.body["name"] != "Wormy" || len(r.body["threat_ids"].([]any)) != 2 || r.body["first_seen"] == nil || r.body["last_seen"] == nil {
		t.Fatalf("create: %d %s", r.code, r.raw)
	}
	campID := r.body["campaign_id"].(string)
	d.do("PATCH", base+"/campaigns/"+campID, reviewer, `{}`).expect(t, 400, "body: changes nothing: give name, description, tags, add_threat_ids or remove_threat_ids")
	d.do("PATCH", base+"/campaigns/"+campID, tok, `{"name":"y"}`).expect(t, 403, "")
	d.do("PATCH", base+"/campaigns/6b1e5b47-0000-4000-8000-000000000000", reviewer, `{"name":"y"}`).expect(t, 404, "")
	r = d.do("PATCH", base+"/campaigns/"+campID, reviewer, fmt.Sprintf(`{"add_threat_ids":[%q],"remove_threat_ids":[%q]}`, ids[2], ids[1]))
	if r.code != 200 || !strings.Contains(r.raw, ids[2]) || strings.Contains(r.raw, ids[1]) {
		t.Fatalf("patch: %d %s", r.code, r.raw)
	}
	if r := d.do("GET", base+"/campaigns/"+campID, tok, ""); r.code != 200 || r.body["description"] != "A **worm** of npm tokens" {
		t.Fatalf("get: %d %s", r.code, r.raw)
	}
	other := d.do("POST", base+"/campaigns", reviewer, `{"name":"Another"}`).expect(t, 201, "")
	page := d.do("GET", base+"/campaigns?limit=1", tok, "")
	next, _ := page.body["next_cursor"].(string)
	if page.code != 200 || page.body["count"] != 1.0 || next == "" || page.body["campaigns"].([]any)[0].(map[string]any)["campaign_id"] != other.body["campaign_id"] {
		t.Fatalf("first page: %d %s", page.code, page.raw)
	}
	if page := d.do("GET", base+"/campaigns?limit=1&cursor="+next, tok, ""); page.code != 200 || !strings.Contains(page.raw, campID) {
		t.Fatalf("second page: %d %s", page.code, page.raw)
	}
	if r := d.do("GET", base+"/campaigns?limit=0", tok, ""); r.code != 400 || !strings.Contains(r.raw, "limit") {
		t.Fatalf("limit 0: %d %s", r.code, r.raw)
	}

	// Records name it (this daemon read it again when it changed).
	for i, want := range []bool{true, false, true} {
		camps, _ := check(i)["campaigns"].([]any)
		named := len(camps) == 1 && camps[0].(map[string]any)["campaign_id"] == campID && camps[0].(map[string]any)["name"] == "Wormy"
		if named != want {
			t.Errorf("report %d's record: campaigns %v", i, camps)
		}
	}
	// STIX: the campaign, attributed from the malware, valid.
	v := stixtest.Optional(t)
	res := d.raw("GET", base+"/query-latest-stix", paid)
	v.Validate(t, res.body)
	var bundle struct{ Objects []map[string]any }
	json.Unmarshal(res.body, &bundle)
	camps, attributed := 0, 0
	for _, o := range bundle.Objects {
		if o["type"] == "campaign" && o["name"] == "Wormy" {
			camps++
		}
		if o["relationship_type"] == "attributed-to" {
			attributed++
		}
	}
	if camps != 1 || attributed != 2 {
		t.Fatalf("STIX: %d campaign objects, %d attributed-to", camps, attributed)
	}
	// MISP: the day's event is tagged.
	res = d.raw("GET", base+"/misp/manifest.json", paid)
	var manifest map[string]any
	json.Unmarshal(res.body, &manifest)
	for event := range manifest {
		if ev := d.raw("GET", base+"/misp/"+event+".json", paid); !strings.Contains(string(ev.body), `threatd:campaign=\"Wormy\"`) {
			t.Fatalf("MISP event without the campaign tag: %.500s", ev.body)
		}
	}
	// The public page, and the report's.
	web := in.browser(d)
	web.get("/campaigns/"+campID).expect(t, 200, "Campaign: Wormy", "wormy-0", "wormy-2", "<strong>worm</strong>")
	web.get("/threats/"+ids[0]).expect(t, 200, `href="/campaigns/`+campID+`"`, "Confidence")
	web.get("/campaigns/6b1e5b47-0000-4000-8000-000000000000").expect(t, 404)
	web.get("/campaigns/"+campID+"?page=2").expect(t, 404, "This campaign's reports fill 1 page.")
	web.get("/campaigns/"+campID+"?page=x").expect(t, 404)
	// The reviewers' forms: a refused report named beside the form,
	// nothing made; then made; a visitor is sent to log in.
	in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "rita@example.com")
	rb := in.browser(d)
	rb.get("/login")
	rb.post("/login", url.Values{"email": {"rita@example.com"}, "password": {"correct horse battery"}}).expect(t, 200)
	rb.get("/review/campaigns").expect(t, 200, "Wormy", "Find suggestions", "Not worked out yet.")
	rb.post("/review/campaigns", url.Values{"name": {"Web one"}, "threat_ids": {pending}}).expect(t, 400, "threat_ids:", "Web one")
	rb.post("/review/campaigns", url.Values{"name": {"Web one"}, "threat_ids": {ids[0] + "\n" + ids[1]}}).expect(t, 200, "Campaign “Web one” made with 2 reports.")
	if p := web.get("/review/campaigns"); !strings.Contains(p.url, "/login") {
		t.Fatalf("a visitor reached the reviewers' campaigns page: %s", p.url)
	}

	// The CLI.
	created := strings.TrimSpace(in.mustCLI("campaign", "create", "--name", "From the CLI", "--description", "made here"))
	if !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(created) {
		t.Fatalf("campaign create printed %q, want the id alone", created)
	}
	in.mustCLI("campaign", "add", created, ids[1])
	var list []map[string]any
	if err := json.Unmarshal([]byte(in.mustCLI("campaign", "list", "--json")), &list); err != nil || len(list) != 4 {
		t.Fatalf("campaign list --json: %v %v", list, err)
	}
	if !strings.Contains(in.mustCLI("campaign", "list"), "From the CLI") {
		t.Fatal("campaign list lacks the campaign")
	}
	in.mustCLI("campaign", "remove", created, ids[1])
	if r := in.cli("campaign", "add", created, pending); r.code == 0 {
		t.Fatal("a pending report joined a campaign through the CLI")
	}

	// Suggestions: the three reports share the URL, the tag and the text.
	d.do("GET", base+"/campaigns/suggestions", tok, "").expect(t, 403, "")
	sg := d.do("GET", base+"/campaigns/suggestions?refresh=true", reviewer, "")
	if sg.code != 200 {
		t.Fatalf("suggestions: %d %s", sg.code, sg.raw)
	}
	reasons, details := map[string]int{}, map[string][]string{}
	for _, s := range sg.body["suggestions"].([]any) {
		m := s.(map[string]any)
		if len(m["threat_ids"].([]any)) == 3 {
			reasons[m["reason"].(string)]++
			details[m["reason"].(string)] = append(details[m["reason"].(string)], m["detail"].(string))
		}
	}
	// Each names what the reports share: the indicator (never its
	// look-up key), the tag, a quote of the text.
	if !slices.Contains(details["shared_indicator"], "url https://collect.worm-c2.example/t") ||
		!slices.Contains(details["shared_indicator"], "domain collect.worm-c2.example") ||
		!strings.Contains(details["near_duplicate_text"][0], "“Self-spreading worm") {
		t.Errorf("suggestion details: %q\n%s", details, sg.raw)
	}
	if reasons["shared_indicator"] == 0 || reasons["campaign_tag"] != 1 || reasons["near_duplicate_text"] != 1 {
		t.Fatalf("suggestions: %v\n%s", reasons, sg.raw)
	}
	if out := in.mustCLI("campaign", "suggestions"); !strings.Contains(out, "campaign_tag: wormy (3 reports)") {
		t.Fatalf("campaign suggestions:\n%s", out)
	}
}
