package main_test

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/stix/stixtest"
)

const taxiiAccept = "application/taxii+json;version=2.1"

// The TAXII 2.1 server as a TIP uses it: discovery, API root, collections,
// objects, manifest, object by id and versions, with every filter;
// authentication by Bearer or Basic, the paid tier, media types, TAXII
// error messages and read-only collections; polling by next and by
// added_after misses and repeats nothing, also across an import whose
// reports were written in one transaction and while reviewers verify
// reports during paging; a revision publishes new versions and a
// withdrawal revoked ones; every object is valid against the OASIS STIX
// 2.1 schemas.
func TestTAXII(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	paid := in.user("tip@example.com", "--tier", "paid")
	free := in.user("free@example.com")
	writer := in.user("writer@example.com", "--tier", "paid")
	in.mustCLI("import", "osv", testbin.OSVSample(t))
	d := in.serve()
	v := stixtest.Optional(t)

	// Authentication, tier, media types.
	anon := &taxiiClient{t: t, d: d}
	a := anon.get("/taxii2/").expect(t, 401)
	if a.body["title"] != "Authorization required" || !strings.HasPrefix(a.hdr.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("401: %s %v", a.raw, a.hdr)
	}
	(&taxiiClient{t: t, d: d, auth: "Bearer thd_nottoken"}).get("/taxii2/").expect(t, 401)
	(&taxiiClient{t: t, d: d, auth: basicAuth("x", "wrong")}).get("/taxii2/").expect(t, 401)
	(&taxiiClient{t: t, d: d, auth: "Bearer " + free}).get("/taxii2/").expect(t, 403)
	c := &taxiiClient{t: t, d: d, auth: basicAuth("opencti", paid)}
	c.get("/taxii2/", "Accept", "application/json").expect(t, 406)
	c.get("/taxii2/", "Accept", "application/taxii+json;version=2.0").expect(t, 406)
	c.get("/taxii2/", "Accept", "application/taxii+json").expect(t, 200)
	disc := c.get("/taxii2/").expect(t, 200).body
	roots, _ := disc["api_roots"].([]any)
	if len(roots) != 1 || disc["default"] != roots[0] || !strings.HasSuffix(roots[0].(string), "/taxii2/api/") {
		t.Fatalf("discovery: %v", disc)
	}
	rootURL, err := url.Parse(roots[0].(string))
	if err != nil || rootURL.Scheme != "https" {
		t.Fatalf("api root %v", roots[0])
	}
	root := c.get(rootURL.Path).expect(t, 200).body
	if vs, _ := root["versions"].([]any); len(vs) != 1 || vs[0] != taxiiAccept || root["max_content_length"] == nil {
		t.Fatalf("api root: %v", root)
	}
	bearer := &taxiiClient{t: t, d: d, auth: "Bearer " + paid}
	cols := bearer.get("/taxii2/api/collections/").expect(t, 200).body["collections"].([]any)
	byAlias := map[string]map[string]any{}
	for _, x := range cols {
		m := x.(map[string]any)
		byAlias[m["alias"].(string)] = m
		if m["can_read"] != true || m["can_write"] != false || m["media_types"].([]any)[0] != "application/stix+json;version=2.1" {
			t.Fatalf("collection %v", m)
		}
	}
	if byAlias["threats"] == nil || byAlias["npm"] == nil || byAlias["pypi"] == nil {
		t.Fatalf("collections: %v", cols)
	}
	threats := byAlias["threats"]["id"].(string)
	npm := byAlias["npm"]["id"].(string)
	if got := c.get("/taxii2/api/collections/"+threats+"/").expect(t, 200).body; got["id"] != threats {
		t.Fatalf("collection: %v", got)
	}
	c.get("/taxii2/api/collections/npm/").expect(t, 200)
	c.get("/taxii2/api/collections/4a0c2e38-0000-4000-8000-000000000000/").expect(t, 404)
	c.get("/taxii2/api/collections/"+threats+"/objects/?limit=0").expect(t, 400)
	c.get("/taxii2/api/collections/"+threats+"/objects/?added_after=yesterday").expect(t, 400)
	c.get("/taxii2/api/collections/"+threats+"/objects/?next=bm9wZQ").expect(t, 400)
	c.get("/taxii2/api/collections/"+threats+"/objects/?match%5Bversion%5D=newest").expect(t, 400)
	c.get("/taxii2/api/collections/"+threats+"/objects/?colour=red").expect(t, 400)
	c.send("POST", "/taxii2/api/collections/"+threats+"/objects/").expect(t, 403)
	c.send("DELETE", "/taxii2/api/collections/"+threats+"/objects/malware--9e4b1f04-4e1d-5d4e-8d2e-1b1c1f1e1d1c/").expect(t, 403)

	// The whole collection, one page: the shared objects and each
	// imported report's objects, valid STIX 2.1.
	whole, _ := c.poll(threats, time.Time{}, 1000, true, "")
	ids := map[string]int{}
	malware := 0
	for _, o := range whole {
		ids[o.id]++
		if err := v.ValidateObject(o.obj); err != nil {
			t.Fatalf("%s: %v", o.id, err)
		}
		if o.obj["type"] == "malware" {
			malware++
		}
	}
	if len(ids) != len(whole) || malware < 250 || whole[0].obj["type"] != "identity" || whole[1].obj["type"] != "marking-definition" {
		t.Fatalf("collection: %d objects, %d distinct, %d malware, first %v", len(whole), len(ids), malware, whole[0].obj["type"])
	}
	// Small pages, by next and by added_after: the same objects in the
	// same order, none repeated; every page of the import (one
	// transaction) holds whole reports.
	for _, byNext := range []bool{true, false} {
		paged, _ := c.poll(threats, time.Time{}, 7, byNext, "")
		if len(paged) != len(whole) {
			t.Fatalf("by next %v: %d objects, want %d", byNext, len(paged), len(whole))
		}
		for i := range paged {
			if paged[i].id != whole[i].id {
				t.Fatalf("by next %v: object %d is %s, want %s", byNext, i, paged[i].id, whole[i].id)
			}
		}
	}
	// Manifest: the same entries.
	var man []any
	for next := ""; ; {
		b := c.get("/taxii2/api/collections/"+threats+"/manifest/?limit=400"+next).expect(t, 200).body
		man = append(man, b["objects"].([]any)...)
		if b["more"] != true {
			break
		}
		next = "&next=" + url.QueryEscape(b["next"].(string))
	}
	if len(man) != len(whole) {
		t.Fatalf("manifest: %d entries, want %d", len(man), len(whole))
	}
	for i, x := range man {
		m := x.(map[string]any)
		if m["id"] != whole[i].id || m["version"] != whole[i].version || m["media_type"] != "application/stix+json;version=2.1" || m["date_added"] == nil {
			t.Fatalf("manifest entry %d: %v, object %s %s", i, m, whole[i].id, whole[i].version)
		}
	}
	// A next value is bound to its request: the collection, added_after
	// and the match filters. An edited one, one used elsewhere, and an
	// empty one are 400 (each was accepted, the last as page one).
	first := c.get("/taxii2/api/collections/"+threats+"/objects/?limit=5&match%5Btype%5D=malware").expect(t, 200).body
	nextValue, _ := first["next"].(string)
	if first["more"] != true || nextValue == "" {
		t.Fatalf("first page: %v", first)
	}
	c.get("/taxii2/api/collections/"+threats+"/objects/?limit=5&match%5Btype%5D=malware&next="+url.QueryEscape(nextValue)).expect(t, 200)
	c.get("/taxii2/api/collections/"+threats+"/manifest/?limit=5&match%5Btype%5D=malware&next="+url.QueryEscape(nextValue)).expect(t, 200)
	for i := range nextValue {
		edited := []byte(nextValue)
		edited[i] = "AB"[map[bool]int{true: 1, false: 0}[edited[i] == 'A']]
		if r := c.get("/taxii2/api/collections/" + threats + "/objects/?limit=5&match%5Btype%5D=malware&next=" + url.QueryEscape(string(edited))); r.code != 400 {
			t.Fatalf("next with character %d changed: %d %s", i, r.code, r.raw)
		}
	}
	for name, q := range map[string]string{
		"another collection":  "/taxii2/api/collections/" + npm + "/objects/?limit=5&match%5Btype%5D=malware&next=",
		"another match[type]": "/taxii2/api/collections/" + threats + "/objects/?limit=5&match%5Btype%5D=indicator&next=",
		"no match[type]":      "/taxii2/api/collections/" + threats + "/objects/?limit=5&next=",
		"added_after added":   "/taxii2/api/collections/" + threats + "/objects/?limit=5&match%5Btype%5D=malware&added_after=2020-01-01T00:00:00Z&next=",
	} {
		if r := c.get(q + url.QueryEscape(nextValue)); r.code != 400 || !strings.Contains(string(r.raw), "next") {
			t.Fatalf("next on %s: %d %s", name, r.code, r.raw)
		}
	}
	if r := c.get("/taxii2/api/collections/" + threats + "/objects/?limit=5&next="); r.code != 400 || !strings.Contains(string(r.raw), "empty") {
		t.Fatalf("empty next: %d %s", r.code, r.raw)
	}
	// Accept with q=0 refuses what it names.
	c.get("/taxii2/", "Accept", "*/*;q=0").expect(t, 406)
	c.get("/taxii2/", "Accept", "application/taxii+json;version=2.1;q=0, */*").expect(t, 406)
	c.get("/taxii2/", "Accept", "application/json, */*;q=0.1").expect(t, 200)

	// Filters.
	inds, _ := c.poll(threats, time.Time{}, 50, true, "&match%5Btype%5D=indicator")
	for _, o := range inds {
		if o.obj["type"] != "indicator" {
			t.Fatalf("match[type]=indicator gave %s", o.id)
		}
	}
	if len(inds) == 0 || len(inds) >= len(whole) {
		t.Fatalf("indicators: %d of %d", len(inds), len(whole))
	}
	if none, _ := c.poll(threats, time.Time{}, 50, true, "&match%5Bspec_version%5D=2.0"); len(none) != 0 {
		t.Fatalf("spec_version 2.0: %d objects", len(none))
	}
	pick := inds[len(inds)/2]
	two := c.get("/taxii2/api/collections/"+threats+"/objects/?match%5Bid%5D="+pick.id+","+whole[0].id).expect(t, 200).body["objects"].([]any)
	if len(two) != 2 {
		t.Fatalf("match[id] of two: %d objects", len(two))
	}
	one := c.get("/taxii2/api/collections/"+threats+"/objects/"+pick.id+"/").expect(t, 200).body["objects"].([]any)
	if len(one) != 1 || one[0].(map[string]any)["pattern"] != pick.obj["pattern"] {
		t.Fatalf("object by id: %v", one)
	}
	if got := c.get("/taxii2/api/collections/"+threats+"/objects/"+pick.id+"/?match%5Bversion%5D="+url.QueryEscape(pick.version)).expect(t, 200).body; len(objectsOf(got)) != 1 ||
		objectsOf(got)[0]["id"] != pick.id || objectsOf(got)[0]["modified"] != pick.version {
		t.Fatalf("object %s at version %s: %v", pick.id, pick.version, got)
	}
	if got := c.get("/taxii2/api/collections/"+threats+"/objects/"+pick.id+"/?match%5Bversion%5D=2020-01-01T00:00:00.000Z").expect(t, 200).body; got["objects"] != nil {
		t.Fatalf("another version: %v", got)
	}
	vers := c.get("/taxii2/api/collections/"+threats+"/objects/"+pick.id+"/versions/").expect(t, 200).body["versions"].([]any)
	if len(vers) != 1 || vers[0] != pick.version {
		t.Fatalf("versions: %v", vers)
	}
	c.get("/taxii2/api/collections/"+threats+"/objects/indicator--00000000-0000-5000-8000-000000000000/").expect(t, 404)
	c.get("/taxii2/api/collections/"+threats+"/objects/indicator--00000000-0000-5000-8000-000000000000/versions/").expect(t, 404)
	c.get("/taxii2/api/collections/"+threats+"/objects/not-an-id/").expect(t, 404)
	// The npm collection: npm reports only.
	npmObjs, _ := c.poll(npm, time.Time{}, 200, true, "&match%5Btype%5D=malware")
	if len(npmObjs) == 0 {
		t.Fatal("no npm reports")
	}
	for _, o := range npmObjs {
		if !strings.HasSuffix(o.obj["name"].(string), "(npm)") {
			t.Fatalf("npm collection holds %v", o.obj["name"])
		}
	}

	// Paging while reviewers verify reports: two pollers (next, and
	// added_after) follow the collection from its end while 40 reports
	// are verified; afterwards each has seen each new report's objects
	// exactly once.
	_, mark := c.poll(threats, time.Time{}, 1000, true, "")
	var pending []string
	for i := range 40 {
		pending = append(pending, d.submit(writer, fmt.Sprintf(`{"report_type":"package","resource_identifier":"taxii-live-%d","registry":"npm","threat_description":"Steals tokens","payload_description":"posts to hxxps://c2-%d[.]taxii-evil[.]example/x"}`, i, i)))
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, id := range pending {
			in.mustCLI("review", "verify", id)
		}
	}()
	seen := map[bool]map[string]int{true: {}, false: {}}
	rounds := map[bool]int{}
	after := map[bool]time.Time{true: mark, false: mark}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
			time.Sleep(2 * freshness)
		default:
		}
		for _, byNext := range []bool{true, false} {
			objs, last := c.poll(threats, after[byNext], 3, byNext, "")
			for _, o := range objs {
				seen[byNext][o.id+" "+o.version]++
				if !o.added.After(after[byNext]) {
					t.Fatalf("object %s added %v, not after %v", o.id, o.added, after[byNext])
				}
			}
			if len(objs) > 0 {
				after[byNext] = last
				rounds[byNext]++
			}
		}
	}
	if rounds[true] < 2 || rounds[false] < 2 {
		t.Fatalf("the pollers saw new objects in %v rounds: they did not poll while reports were verified", rounds)
	}
	live, _ := c.poll(threats, mark, 1000, true, "")
	per := len(live) / 40
	if len(live) < 40*3 || len(live)%40 != 0 {
		t.Fatalf("the 40 new reports have %d objects", len(live))
	}
	for _, byNext := range []bool{true, false} {
		if len(seen[byNext]) != len(live) {
			t.Fatalf("by next %v: %d object versions after the 40 verifications, want %d", byNext, len(seen[byNext]), len(live))
		}
		for _, o := range live {
			if n := seen[byNext][o.id+" "+o.version]; n != 1 {
				t.Fatalf("by next %v: %s %s seen %d times", byNext, o.id, o.version, n)
			}
		}
	}

	// A revision publishes new versions after the last poll; a withdrawal
	// publishes the objects revoked.
	revised, withdrawn := pending[0], pending[1]
	time.Sleep(5 * time.Millisecond)
	d.do("PUT", base+"/modify-threat-report", writer, fmt.Sprintf(`{"threat_id":%q,"severity_level":"critical"}`, revised)).expect(t, 200, "")
	m := revLine.FindStringSubmatch(in.mustCLI("review", "list"))
	if m == nil || m[3] != revised {
		t.Fatal("the revision is not pending")
	}
	in.mustCLI("review", "approve-revision", m[1], "--note", "confirmed")
	time.Sleep(5 * time.Millisecond)
	in.mustCLI("review", "reject", withdrawn, "--note", "a false positive")
	var changed []seenObject
	eventually(t, "the revision and the withdrawal reach TAXII", func() bool {
		changed, _ = c.poll(threats, after[false], 100, false, "")
		return len(changed) == 2*per
	})
	for _, o := range changed {
		old := o.obj["modified"].(string) <= o.obj["created"].(string)
		if err := v.ValidateObject(o.obj); err != nil || old {
			t.Fatalf("%s: %v (modified %v, created %v)", o.id, err, o.obj["modified"], o.obj["created"])
		}
	}
	for _, o := range changed[:per] {
		if o.obj["revoked"] == true {
			t.Fatalf("the revised report's %s is revoked", o.id)
		}
	}
	for _, o := range changed[per:] {
		if o.obj["revoked"] != true {
			t.Fatalf("the withdrawn report's %s is not revoked", o.id)
		}
	}
	// The collection from the start lists each report once, at its
	// latest version.
	final, _ := c.poll(threats, time.Time{}, 1000, true, "")
	count := map[string]int{}
	for _, o := range final {
		count[o.id]++
	}
	for id, n := range count {
		if n != 1 {
			t.Fatalf("%s listed %d times", id, n)
		}
	}
	if len(final) != len(whole)+len(live) {
		t.Fatalf("final collection: %d objects, want %d", len(final), len(whole)+len(live))
	}
	t.Logf("%d TAXII requests", c.calls)
}

// objectsOf is the objects of a TAXII envelope.
func objectsOf(envelope map[string]any) []map[string]any {
	var out []map[string]any
	for _, o := range asSlice(envelope["objects"]) {
		if m, ok := o.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }
