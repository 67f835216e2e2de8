package daemon_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/core"
)

func TestPaidEndpointsNeedPaidTier(t *testing.T) {
	t.Parallel()
	d := start(t, quiet)
	free := d.user("free@example.com")
	paid := d.user("paid@example.com", "--tier", "paid")
	for _, p := range []string{"/threat-feed", "/query-by-username?username=x", "/threat-data?threat_id=00000000-0000-4000-8000-000000000000"} {
		d.do("GET", base+p, free, "").expect(t, 403, "This endpoint requires a paid subscription")
		if r := d.do("GET", base+p, paid, ""); r.code == 403 {
			t.Fatalf("%s: paid token refused: %v", p, r.body)
		}
	}
	// Every paid call is counted per token.
	acc := d.do("GET", base+"/account", paid, "").expect(t, 200, "")
	calls := acc.body["paid_calls_today"].(map[string]any)
	if calls["/threat-feed"] != float64(1) || calls["/query-by-username"] != float64(1) || calls["/threat-data"] != float64(1) {
		t.Fatalf("paid calls: %v", calls)
	}
	if d.do("GET", base+"/account", free, "").body["paid_calls_today"].(map[string]any)["/threat-feed"] != nil {
		t.Fatal("refused calls counted as paid calls")
	}
}

func TestThreatFeed(t *testing.T) {
	t.Parallel()
	d := start(t, quiet+"  new_user_max_unverified: 0\n  feed_page_max: 5\n  feed_max_window: 48h\n")
	tok := d.user("feed@example.com", "--tier", "paid")
	other := d.user("other@example.com", "--tier", "paid")
	var ids []string
	for i := range 7 {
		ids = append(ids, d.submit(tok, fmt.Sprintf(`{"report_type":"package","resource_identifier":"feed-%d","registry":"%s","threat_description":"x"}`, i, []string{"npm", "pypi"}[i%2])))
	}
	d.verify(ids...)
	since := url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))

	// Page through with limit 3 while new reports are verified: every report
	// of the window comes exactly once, in verification order.
	r := feedPage(t, d, tok, "limit=3&since="+since)
	seen := map[string]int{}
	var order []string
	collect := func(r response) {
		for _, th := range r.body["threats"].([]any) {
			rec := th.(map[string]any)
			apitest.CheckRecord(t, rec)
			seen[rec["id"].(string)]++
			order = append(order, rec["id"].(string))
		}
	}
	collect(r)
	late := d.submit(tok, `{"report_type":"ip","resource_identifier":"192.0.2.99","threat_description":"late"}`)
	d.verify(late)
	pages := 1
	for r.body["next_cursor"] != nil {
		cur := r.body["next_cursor"].(string)
		// The cursor is bound to its query and its token.
		d.do("GET", base+"/threat-feed?limit=3&since="+since+"&ecosystem=npm&cursor="+url.QueryEscape(cur), tok, "").expect(t, 400, "")
		d.do("GET", base+"/threat-feed?limit=3&since="+since+"&cursor="+url.QueryEscape(cur), other, "").expect(t, 400, "")
		d.do("GET", base+"/threat-feed?limit=3&since="+since+"&cursor="+url.QueryEscape(cur[:len(cur)-3]+"AAA"), tok, "").expect(t, 400, "")
		r = feedPage(t, d, tok, "limit=3&since="+since+"&cursor="+url.QueryEscape(cur))
		collect(r)
		pages++
	}
	if pages != 3 || len(seen) != 7 {
		t.Fatalf("%d pages, %d reports: %v", pages, len(seen), seen)
	}
	for i, id := range ids {
		if seen[id] != 1 || order[i] != id {
			t.Fatalf("report %d seen %d times at the wrong place: %v", i, seen[id], order)
		}
	}
	if seen[late] != 0 {
		t.Fatal("a report verified after the first page joined a pinned window")
	}
	// Filters and defaults.
	if n := len(feedPage(t, d, tok, "ecosystem=npm&since="+since).body["threats"].([]any)); n != 4 {
		t.Fatalf("npm: %d", n)
	}
	if r := feedPage(t, d, tok, "hours=2"); len(r.body["threats"].([]any)) != 5 || r.body["next_cursor"] == nil {
		t.Fatalf("hours=2, default page: %v", r.body["count"])
	}
	// The caps.
	for _, q := range []string{"limit=6", "limit=0", "hours=25", "hours=0", "hours=1&since=" + since,
		"since=" + url.QueryEscape(time.Now().Add(-72*time.Hour).UTC().Format(time.RFC3339)),
		"since=yesterday", "until=" + since, "cursor=garbage", "page=2"} {
		if r := d.do("GET", base+"/threat-feed?"+q, tok, ""); r.code != 400 {
			t.Errorf("%s: %d %v, want 400", q, r.code, r.body)
		}
	}
}

func TestQueryByUsername(t *testing.T) {
	t.Parallel()
	d := start(t, quiet+"  new_user_max_unverified: 0\n")
	tok := d.user("u@example.com", "--tier", "paid")
	var mine []string
	for i, pub := range []string{"Mallory", "mallory", "mallory2", "eve", "MALLORY"} {
		id := d.submit(tok, fmt.Sprintf(`{"report_type":"domain","resource_identifier":"pub-%d.example","threat_description":"x","publisher":%q}`, i, pub))
		d.verify(id)
		if strings.EqualFold(pub, "mallory") {
			mine = append(mine, id)
		}
	}
	pending := d.submit(tok, `{"report_type":"domain","resource_identifier":"pub-pending.example","threat_description":"x","publisher":"mallory"}`)
	r := d.do("GET", base+"/query-by-username?username=mAlLoRy&limit=2", tok, "").expect(t, 200, "")
	got := map[string]bool{}
	for {
		if r.body["username"] != "mAlLoRy" {
			t.Fatalf("username echo: %v", r.body["username"])
		}
		for _, th := range r.body["threats"].([]any) {
			got[th.(map[string]any)["id"].(string)] = true
		}
		if r.body["next_cursor"] == nil {
			break
		}
		r = d.do("GET", base+"/query-by-username?username=mAlLoRy&limit=2&cursor="+url.QueryEscape(r.body["next_cursor"].(string)), tok, "").expect(t, 200, "")
	}
	if len(got) != 3 || got[pending] {
		t.Fatalf("found %v, want exactly the 3 verified reports of mallory (not mallory2, not pending)", got)
	}
	for _, id := range mine {
		if !got[id] {
			t.Fatalf("missing %s", id)
		}
	}
	d.do("GET", base+"/query-by-username", tok, "").expect(t, 400, "username: is required")
	if n := d.do("GET", base+"/query-by-username?username=mall", tok, "").body["count"]; n != float64(0) {
		t.Fatalf("substring matched: %v", n)
	}
}

func TestThreatData(t *testing.T) {
	t.Parallel()
	d := start(t, quiet+"  new_user_max_unverified: 0\n")
	sub := d.user("sub@example.com", "--tier", "paid")
	other := d.user("other@example.com", "--tier", "paid")
	d.user("rev@example.com", "--tier", "paid", "--role", "reviewer", "--name", "Rev")
	rev := d.token("rev@example.com")
	id := d.submit(sub, `{"report_type":"package","resource_identifier":"data-pkg","registry":"npm","threat_description":"Drops a miner",
		"version_info":"1.0.1, 1.0.2","evidence_references":"https://blog.example/data-pkg",
		"payload_description":"Analysis at https://blog.example/data-pkg and https://socket.dev/npm/package/data-pkg; code at https://github.com/someone/data-pkg. Downloads hxxps://miner[.]evil-pool[.]com/x.sh from 203[.]0[.]113[.]50 (sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08) and pays 0xAbCdEf0123456789aBcDeF0123456789AbCdEf01"}`)
	path := base + "/threat-data?threat_id=" + id
	d.do("GET", path, other, "").expect(t, 404, "")
	d.do("GET", path, sub, "").expect(t, 200, "")
	d.do("GET", path, rev, "").expect(t, 200, "")
	d.review(core.DecisionVerify, 1, "sandboxed", "rev@example.com", id)
	d.do("PUT", base+"/modify-threat-report", other, fmt.Sprintf(`{"threat_id":%q,"severity_level":"high"}`, id)).expect(t, 200, "")
	r := d.do("GET", path, other, "").expect(t, 200, "")
	rec := r.body["threat"].(map[string]any)
	apitest.CheckRecord(t, rec)
	if rec["id"] != id || rec["verified_by"] != "Rev" {
		t.Fatalf("record: %v", rec)
	}
	// Every indicator says where it comes from and how sure it is; the
	// package indicator carries version_info; the report's references, an
	// analysis site and the package's own repository are not indicators.
	iocs := map[string]string{}
	for _, i := range r.body["iocs"].([]any) {
		m := i.(map[string]any)
		iocs[m["type"].(string)+" "+m["value"].(string)] = fmt.Sprint(m["origin"], " ", m["confidence"], " ", m["versions"])
	}
	for want, label := range map[string]string{"package data-pkg": "asset 85 [1.0.1 1.0.2]", "url https://miner.evil-pool.com/x.sh": "payload 50 <nil>",
		"domain miner.evil-pool.com": "payload 50 <nil>", "ip 203.0.113.50": "payload 50 <nil>",
		"hash 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08": "payload 50 <nil>",
		"wallet 0xabcdef0123456789abcdef0123456789abcdef01":                     "payload 50 <nil>"} {
		if iocs[want] != label {
			t.Errorf("iocs: %q is %q, want %q (all: %v)", want, iocs[want], label, iocs)
		}
	}
	if len(iocs) != 6 {
		t.Errorf("iocs: %d, want 6 (no reference or own-repository links): %v", len(iocs), iocs)
	}
	revs := r.body["revisions"].([]any)
	if len(revs) != 1 || revs[0].(map[string]any)["state"] != "pending" || fmt.Sprint(revs[0].(map[string]any)["fields"]) != "[severity_level]" {
		t.Fatalf("revisions: %v", revs)
	}
	hist := r.body["review_history"].([]any)
	if len(hist) != 3 || hist[1].(map[string]any)["action"] != "verify" || hist[1].(map[string]any)["actor"] != "Rev" || hist[1].(map[string]any)["note"] != "sandboxed" {
		t.Fatalf("history: %v", hist)
	}
	d.do("GET", base+"/threat-data?threat_id=00000000-0000-4000-8000-000000000000", other, "").expect(t, 404, "")
	d.do("GET", base+"/threat-data?threat_id=nope", other, "").expect(t, 400, "")
	d.do("GET", base+"/threat-data", other, "").expect(t, 400, "threat_id: is required")
}
