package main_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/stix/stixtest"
)

// poller is a feed consumer that follows /threat-feed?mode=changes with its
// cursor, as a TIP connector would.
type poller struct {
	t      *testing.T
	d      *daemon
	tok    string
	cursor string
	seen   map[string]int // "id type vversion" → times seen
	order  []string
}

func (p *poller) poll(limit int) int {
	p.t.Helper()
	n := 0
	for {
		q := fmt.Sprintf("mode=changes&hours=1&limit=%d", limit)
		if p.cursor != "" {
			q += "&cursor=" + url.QueryEscape(p.cursor)
		}
		r := feedPage(p.t, p.d, p.tok, q)
		if r.body["mode"] != "changes" || r.body["next_cursor"] == nil {
			p.t.Fatalf("changes page without mode or cursor: %v", r.body)
		}
		p.cursor = r.body["next_cursor"].(string)
		page := r.body["threats"].([]any)
		for _, th := range page {
			rec := th.(map[string]any)
			apitest.CheckRecord(p.t, rec)
			ch := rec["change"].(map[string]any)
			if _, err := time.Parse(time.RFC3339Nano, ch["at"].(string)); err != nil {
				p.t.Fatalf("change at %v", ch["at"])
			}
			k := fmt.Sprintf("%s %s v%v", rec["id"], ch["type"], ch["version"])
			p.seen[k]++
			p.order = append(p.order, k)
			n++
		}
		if len(page) < limit {
			return n
		}
	}
}

// stixObjects fetches a STIX export, validates it against the OASIS schemas
// and returns its objects by id.
func stixObjects(t *testing.T, d *daemon, v *stixtest.Validator, tok, path string) map[string]map[string]any {
	t.Helper()
	res := d.raw("GET", base+path, tok)
	if res.code != 200 {
		t.Fatalf("%s: %d %s", path, res.code, res.body)
	}
	v.Validate(t, res.body)
	var b struct {
		Objects []map[string]any `json:"objects"`
	}
	if err := json.Unmarshal(res.body, &b); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, o := range b.Objects {
		out[o["id"].(string)] = o
	}
	return out
}

// malwareOf returns the malware object of the report whose threatd id is id.
func malwareOf(objects map[string]map[string]any, id string) map[string]any {
	for _, o := range objects {
		if o["type"] != "malware" {
			continue
		}
		for _, r := range o["external_references"].([]any) {
			if r.(map[string]any)["external_id"] == id {
				return o
			}
		}
	}
	return nil
}

// Revisions and withdrawals reach every consumer: a poller of the changes
// feed sees each verification, revision and withdrawal exactly once, with
// what happened; the STIX exports publish the revised report's objects again
// with modified advanced and the withdrawn one's revoked; an import appears
// in the windows when it is imported here, however old upstream.
func TestChangesReachFeedConsumers(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n  feed_page_max: 50\n")
	tok := in.user("tip@example.com", "--tier", "paid")
	other := in.user("editor@example.com", "--tier", "paid")
	d := in.serve()
	v := stixtest.Optional(t)
	p := &poller{t: t, d: d, tok: tok, seen: map[string]int{}}
	if n := p.poll(2); n != 0 {
		t.Fatalf("an empty service has %d changes", n)
	}
	revised := d.submit(tok, `{"report_type":"package","resource_identifier":"delta-pkg","registry":"npm","threat_description":"Steals tokens",
		"version_info":"1.0.1","payload_description":"Posts to hxxps://c2[.]delta-evil[.]example/in"}`)
	withdrawn := d.submit(tok, `{"report_type":"domain","resource_identifier":"delta-wrong.example","threat_description":"Phishing kit"}`)
	pending := d.submit(tok, `{"report_type":"ip","resource_identifier":"192.0.2.77","threat_description":"never verified"}`)
	in.mustCLI("review", "verify", revised, withdrawn)
	if n := p.poll(2); n != 2 || p.seen[revised+" verified v1"] != 1 || p.seen[withdrawn+" verified v1"] != 1 {
		t.Fatalf("after two verifications: %v", p.order)
	}
	before := stixObjects(t, d, v, tok, "/query-latest-stix")
	beforeMalware := malwareOf(before, revised)
	if beforeMalware == nil || malwareOf(before, withdrawn) == nil {
		t.Fatal("the verified reports are not in the STIX export")
	}

	// A revision, approved; a withdrawal; an import of a record published
	// upstream in 2022; a pending report's edit and rejection (invisible).
	d.do("PUT", base+"/modify-threat-report", other, fmt.Sprintf(`{"threat_id":%q,"version_info":"1.0.1, 1.0.2","severity_level":"critical"}`, revised)).expect(t, 200, "")
	m := revLine.FindStringSubmatch(in.mustCLI("review", "list"))
	if m == nil || m[3] != revised {
		t.Fatal("the revision is not pending")
	}
	time.Sleep(5 * time.Millisecond) // STIX timestamps have millisecond precision
	in.mustCLI("review", "approve-revision", m[1], "--note", "second version confirmed")
	in.mustCLI("review", "reject", withdrawn, "--note", "a false positive: the domain is a parked page")
	d.do("PUT", base+"/modify-threat-report", tok, fmt.Sprintf(`{"threat_id":%q,"severity_level":"low"}`, pending)).expect(t, 200, "")
	in.mustCLI("review", "reject", pending, "--version", "2", "--note", "no evidence")
	dir := t.TempDir()
	osv := kiotaRecord()
	os.WriteFile(filepath.Join(dir, "MAL-2022-4173.json"), osv, 0o644)
	in.mustCLI("import", "osv", dir)
	var imported string
	eventually(t, "the imported report checked", func() bool {
		det, ok := d.do("GET", checkPath("purl", "pkg:npm/kiota-authentication-azure"), tok, "").body["details"].(map[string]any)
		if ok {
			imported = det["id"].(string)
		}
		return ok
	})

	if n := p.poll(2); n != 3 {
		t.Fatalf("after a revision, a withdrawal and an import: %d new changes %v", n, p.order)
	}
	for _, k := range []string{revised + " revised v2", withdrawn + " withdrawn v1", imported + " verified v1"} {
		if p.seen[k] != 1 {
			t.Errorf("change %q seen %d times: %v", k, p.seen[k], p.order)
		}
	}
	for k, n := range p.seen {
		if n != 1 || strings.HasPrefix(k, pending) {
			t.Errorf("%s seen %d times", k, n)
		}
	}
	if n := p.poll(2); n != 0 {
		t.Fatalf("a poll with nothing new returned %d changes", n)
	}
	// Published upstream in 2022, imported now: in the 1-hour window.
	if mw := malwareOf(stixObjects(t, d, v, tok, "/anomali-feed?hours=1"), imported); mw == nil || mw["revoked"] != nil {
		t.Fatalf("the report imported now is not in the Anomali window: %v", mw)
	}
	// An upstream withdrawal reaches the poller too.
	var rec map[string]any
	json.Unmarshal(osv, &rec)
	rec["modified"], rec["withdrawn"] = "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"
	b, _ := json.Marshal(rec)
	os.WriteFile(filepath.Join(dir, "MAL-2022-4173.json"), b, 0o644)
	in.mustCLI("import", "osv", dir)
	if n := p.poll(50); n != 1 || p.seen[imported+" withdrawn v1"] != 1 {
		t.Fatalf("upstream withdrawal: %v", p.order)
	}

	// The plain feed lists what became visible in the window and is still
	// verified: the imported report was visible for a while, but is gone now.
	plain := feedPage(t, d, tok, "hours=1")
	var ids []string
	for _, th := range plain.body["threats"].([]any) {
		ids = append(ids, th.(map[string]any)["id"].(string))
	}
	if strings.Join(ids, ",") != revised {
		t.Fatalf("plain feed: %v, want only %s", ids, revised)
	}

	// STIX: the revised report's objects again, same ids, modified advanced;
	// the withdrawn ones revoked, in both exports.
	for _, path := range []string{"/query-latest-stix", "/anomali-feed?hours=1"} {
		after := stixObjects(t, d, v, tok, path)
		mw := malwareOf(after, revised)
		if mw == nil || mw["id"] != beforeMalware["id"] || mw["created"] != beforeMalware["created"] ||
			!(mw["modified"].(string) > beforeMalware["modified"].(string)) || mw["revoked"] != nil {
			t.Fatalf("%s: revised malware %v, before %v", path, mw, beforeMalware)
		}
		versioned := false
		for _, o := range after {
			if pat, _ := o["pattern"].(string); strings.Contains(pat, "delta-pkg") {
				versioned = strings.Contains(pat, "software:version IN ('1.0.1', '1.0.2')")
			}
		}
		if !versioned {
			t.Errorf("%s: the package indicator does not carry the revised versions", path)
		}
		for _, gone := range []string{withdrawn, imported} {
			w := malwareOf(after, gone)
			if w == nil || w["revoked"] != true {
				t.Fatalf("%s: withdrawn %s: %v", path, gone, w)
			}
			for _, o := range after {
				if o["type"] == "relationship" && o["target_ref"] == w["id"] && (o["revoked"] != true || after[o["source_ref"].(string)]["revoked"] != true) {
					t.Fatalf("%s: an indicator of the withdrawn report is not revoked: %v", path, o)
				}
			}
		}
	}
	// The cursor is the caller's: another token cannot use it.
	d.do("GET", base+"/threat-feed?mode=changes&hours=1&cursor="+url.QueryEscape(p.cursor), other, "").expect(t, 400, "cursor: is not a cursor this query issued (a cursor is bound to its query and its token, and expires)")
	d.do("GET", base+"/threat-feed?mode=everything", tok, "").expect(t, 400, `mode: must be "verified" or "changes" (got "everything")`)
}
