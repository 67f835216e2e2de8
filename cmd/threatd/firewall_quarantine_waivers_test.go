package main_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// quarantineFixture is TestFirewallQuarantine's daemon and what it
// serves, shared by its subtests in this file.
type quarantineFixture struct {
	now, old, fresh             time.Time
	u                           *fakeregistry.Registry
	in                          *instance
	tok, reviewer, admin        string
	recv                        *receiver
	hookID, secret, reportsHook string
	d                           *daemon
	fw, until                   string
}

func quarantineWaivers(t *testing.T, f *quarantineFixture) {
	in, tok, reviewer, admin, d, fw := f.in, f.tok, f.reviewer, f.admin, f.d, f.fw
	fwReport(t, in, d, tok, "npm", "q-evil", "1.0.1")
	eventually(t, "q-evil 1.0.1 blocked", func() bool {
		code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok)
		return code == 403
	})
	// Bad input: 400 naming the field, exit 2, nothing stored.
	for body, field := range map[string]string{
		`{"ecosystem":"npm","name":"q-evil","rule":"malicious","for":"1h"}`:                                     "reason",
		`{"ecosystem":"npm","name":"q-evil","rule":"malicious","reason":"ours"}`:                                "for",
		`{"ecosystem":"cpan","name":"q-evil","rule":"malicious","reason":"ours","for":"1h"}`:                    "ecosystem",
		`{"ecosystem":"npm","name":"q-evil","rule":"typosquat","reason":"ours","for":"1h"}`:                     "rule",
		`{"ecosystem":"npm","name":"q-evil","rule":"malicious","reason":"ours","for":"a while"}`:                "for",
		`{"ecosystem":"npm","name":"q-evil","rule":"malicious","reason":"ours","until":"2020-01-01T00:00:00Z"}`: "until",
	} {
		r := d.do("POST", base+"/firewall/waivers", reviewer, body)
		if r.code != 400 || r.body["field"] != field {
			t.Errorf("POST %s: %d %v, want 400 naming %s", body, r.code, r.body, field)
		}
	}
	if r := in.cli("firewall", "waive", "npm", "q-evil@1.0.1", "--rule", "malicious", "--for", "1h"); r.code != 2 || !strings.Contains(r.stderr, "reason") {
		t.Errorf("waive without a reason: exit %d %s", r.code, r.stderr)
	}
	if r := in.cli("firewall", "waive", "npm", "q-evil@1.0.1", "--rule", "malicious", "--reason", "x", "--for", "soon"); r.code != 2 || !strings.Contains(r.stderr, "--for") {
		t.Errorf("waive --for soon: exit %d %s", r.code, r.stderr)
	}
	if r := d.do("GET", base+"/firewall/waivers", reviewer, ""); r.code != 200 || r.body["count"] != 0.0 {
		t.Fatalf("waivers after bad input: %d %v", r.code, r.body)
	}
	if r := d.do("POST", base+"/firewall/waivers", tok, `{"ecosystem":"npm","name":"q-evil","rule":"malicious","reason":"ours","for":"1h"}`); r.code != 403 {
		t.Fatalf("a submitter's waiver: %d %v", r.code, r.body)
	}
	// Wide waivers are an administrator's: a reviewer's of a glob, or
	// longer than firewall.reviewer_waiver_max (168h), is 403.
	for body, why := range map[string]string{
		`{"ecosystem":"npm","name":"*","rule":"malicious","reason":"ours","for":"1h"}`:       "a waiver of a name glob that names fewer than 3 letters or digits (*) needs an administrator",
		`{"ecosystem":"npm","name":"@*/*","rule":"malicious","reason":"ours","for":"1h"}`:    "a waiver of a name glob that names fewer than 3 letters or digits (@*/*) needs an administrator",
		`{"ecosystem":"npm","name":"q-evil","rule":"malicious","reason":"ours","for":"30d"}`: "a waiver for longer than 7d needs an administrator",
	} {
		if r := d.do("POST", base+"/firewall/waivers", reviewer, body); r.code != 403 || !strings.Contains(r.raw, why) {
			t.Errorf("a reviewer's wide waiver %s: %d %s", body, r.code, r.raw)
		}
	}
	if r := d.do("GET", base+"/firewall/waivers", reviewer, ""); r.code != 200 || r.body["count"] != 0.0 {
		t.Fatalf("waivers after refused wide ones: %d %v", r.code, r.body)
	}

	// A waiver by CLI, short: the version installs until it ends.
	id := strings.TrimSpace(in.mustCLI("firewall", "waive", "npm", "q-evil@1.0.1", "--rule", "malicious", "--reason", "our fork, reviewed", "--for", "20s", "--as", "rita@example.com"))
	eventually(t, "the waiver applied", func() bool {
		code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok)
		return code == 200
	})
	_, _, body := d.fwGet(fw+"/npm/q-evil", tok)
	if !strings.Contains(string(body), `"latest":"1.0.1"`) {
		t.Fatalf("while waived, 1.0.1 is listed again: %s", body)
	}
	list := in.mustCLI("firewall", "waivers", "--json")
	if !strings.Contains(list, id) || !strings.Contains(list, `"reason":"our fork, reviewed"`) || !strings.Contains(list, `"created_by":"rita@example.com"`) {
		t.Fatalf("waivers --json: %s", list)
	}
	apitest.Eventually(t, "the waiver's end", 40*time.Second, func() bool {
		code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok)
		return code == 403
	})

	// By API: made, listed, removed; the version is blocked again.
	r := d.do("POST", base+"/firewall/waivers", reviewer, `{"ecosystem":"npm","name":"q-evil","version":"1.0.1","rule":"malicious","reason":"false positive","for":"1h"}`)
	if r.code != 201 || r.body["created_by"] != "rita@example.com" || r.body["rule"] != "malicious" || r.body["waiver_id"] == nil || r.body["until"] == nil {
		t.Fatalf("POST waiver: %d %v", r.code, r.body)
	}
	apiID := r.body["waiver_id"].(string)
	code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok)
	if code != 200 {
		t.Fatalf("a waiver made on this daemon applies at once: %d", code)
	}
	// The real client installs the waived version.
	if _, err := exec.LookPath("npm"); err == nil {
		dir := npmProject(t)
		if out, ok := client(t, dir, npmEnv(t, in, d, tok), "npm", "install", "q-evil@1.0.1"); !ok || npmInstalled(dir, "q-evil") != "1.0.1" {
			t.Fatalf("npm install q-evil@1.0.1 while waived:\n%s", out)
		}
	}
	if r := d.do("GET", base+"/firewall/waivers", admin, ""); r.code != 200 || r.body["count"] != 1.0 {
		t.Fatalf("GET waivers: %d %v", r.code, r.body)
	}
	if r := d.do("DELETE", base+"/firewall/waivers/"+apiID, reviewer, ""); r.code != 204 {
		t.Fatalf("DELETE waiver: %d %v", r.code, r.body)
	}
	if r := d.do("DELETE", base+"/firewall/waivers/"+apiID, reviewer, ""); r.code != 404 {
		t.Fatalf("DELETE again: %d %v", r.code, r.body)
	}
	if code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok); code != 403 {
		t.Fatalf("after the waiver's removal: %d", code)
	}
}

func quarantineWeb(t *testing.T, f *quarantineFixture) {
	in, tok, d, fw := f.in, f.tok, f.d, f.fw
	in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "root@example.com")
	b := in.browser(d)
	b.get("/login?next=/admin/firewall")
	b.post("/login", url.Values{"email": {"root@example.com"}, "password": {"correct horse battery"}, "next": {"/admin/firewall"}}).
		expect(t, 200, "Waivers", "No waivers in force", "Firewall blocks", "q-evil")
	// Without a reason: the form again, naming the field; nothing made.
	b.post("/admin/firewall/waivers", url.Values{"ecosystem": {"npm"}, "name": {"q-evil"}, "version": {"1.0.1"}, "rule": {"malicious"}, "for": {"1h"}}).
		expect(t, 400, "reason: is required", "No waivers in force")
	page := b.post("/admin/firewall/waivers", url.Values{"ecosystem": {"npm"}, "name": {"q-evil"}, "version": {"1.0.1"}, "rule": {"malicious"},
		"reason": {"checked by hand: <b>not</b> malicious"}, "for": {"2h"}}).
		expect(t, 200, "q-evil", "@1.0.1", "checked by hand: <b>not</b> malicious", "root@example.com")
	if page.body != "" && strings.Contains(page.body, "<b>not</b>") {
		t.Fatal("the reason is not escaped")
	}
	code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok)
	if code != 200 {
		t.Fatalf("a waiver made on the page applies at once: %d", code)
	}
	ws := in.mustCLI("firewall", "waivers", "--json")
	var list []struct {
		WaiverID string `json:"waiver_id"`
	}
	if json.Unmarshal([]byte(ws), &list) != nil || len(list) != 1 {
		t.Fatalf("waivers: %s", ws)
	}
	b.post("/admin/firewall/waivers/"+list[0].WaiverID+"/remove", url.Values{}).expect(t, 200, "No waivers in force")
	if code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok); code != 403 {
		t.Fatalf("after the removal on the page: %d", code)
	}
}

func quarantineDecisions(t *testing.T, f *quarantineFixture) {
	in, reviewer, admin, recv, hookID, secret, reportsHook, d, until := f.in, f.reviewer, f.admin, f.recv, f.hookID, f.secret, f.reportsHook, f.d, f.until
	// Every decision reaches storage within the recorder's flush.
	want := map[string]bool{"quarantine/block/q-pkg@1.1.0": false, "malicious/block/q-evil@1.0.1": false, "malicious/waived/q-evil@1.0.1": false,
		"install_scripts/warn/q-scripts@1.0.1": false, "quarantine/block/example.com/qmod@v1.1.0": false, "quarantine/block/q-py@1.1.0": false}
	var all []map[string]any
	listAll := func() {
		all = nil
		cursor := ""
		for pages := 0; pages < 1000; pages++ {
			r := d.do("GET", base+"/firewall/decisions?limit=3"+cursor, admin, "")
			if r.code != 200 {
				t.Fatalf("decisions: %d %v", r.code, r.body)
			}
			for _, x := range r.body["decisions"].([]any) {
				all = append(all, x.(map[string]any))
			}
			next, _ := r.body["next_cursor"].(string)
			if next == "" {
				break
			}
			cursor = "&cursor=" + next
		}
	}
	defer func() {
		if t.Failed() {
			t.Logf("decisions seen: %v", want)
		}
	}()
	apitest.Eventually(t, "the decisions listed", 10*time.Second, func() bool {
		listAll()
		for k := range want {
			want[k] = false
		}
		for _, x := range all {
			want[fmt.Sprintf("%s/%s/%s@%s", x["rule"], x["action"], x["name"], x["version"])] = true
		}
		for _, seen := range want {
			if !seen {
				return false
			}
		}
		return true
	})
	// The last requests' decisions are written within a flush (250 ms).
	time.Sleep(time.Second)
	listAll()
	for _, x := range all {
		if x["name"] == "example.com" {
			t.Fatalf("a module that does not exist (the go command probes example.com) was judged: %v", x)
		}
		if x["user"] != "dev@example.com" || x["client_ip"] != "127.0.0.1" || x["time"] == nil || x["ecosystem"] == nil {
			t.Fatalf("decision %v", x)
		}
		if x["name"] == "q-pkg" && (x["purl"] != "pkg:npm/q-pkg@1.1.0" || x["until"] != until) {
			t.Fatalf("held decision %v", x)
		}
	}
	if r := d.do("GET", base+"/firewall/decisions", reviewer, ""); r.code != 403 {
		t.Fatalf("a reviewer lists decisions: %d", r.code)
	}
	if r := d.do("GET", base+"/firewall/decisions?cursor=nope", admin, ""); r.code != 400 || r.body["field"] != "cursor" {
		t.Fatalf("a bad cursor: %d %v", r.code, r.body)
	}
	cli := in.mustCLI("firewall", "decisions", "--json")
	if n := strings.Count(cli, "\n"); n != len(all) || !strings.Contains(cli, `"rule":"quarantine"`) {
		t.Fatalf("firewall decisions --json: %d lines for %d decisions:\n%s", n, len(all), cli)
	}
	// The webhook receiver gets the blocked and warned events, signed;
	// the report subscription none of them.
	apitest.Eventually(t, "the firewall events delivered", 15*time.Second, func() bool {
		blocked, warned := 0, 0
		for _, dl := range recv.deliveries() {
			switch dl.Type {
			case "firewall.blocked":
				blocked++
			case "firewall.warned":
				warned++
			}
		}
		return blocked >= 4 && warned >= 1
	})
	for _, dl := range recv.deliveries() {
		if !strings.HasPrefix(dl.Type, "firewall.") {
			continue
		}
		if err := verifyWebhook(secret, map[string][]string{"Webhook-Id": {dl.ID}, "Webhook-Timestamp": {dl.Timestamp}, "Webhook-Signature": {dl.Signature}}, dl.Body, time.Now()); err != nil {
			t.Fatalf("delivery %s: %v", dl.ID, err)
		}
		var ev struct {
			Type string
			Data map[string]any
		}
		if json.Unmarshal(dl.Body, &ev) != nil || ev.Data["rule"] == nil || ev.Data["action"] == nil || ev.Data["purl"] == nil {
			t.Fatalf("event body %s", dl.Body)
		}
	}
	hooks := in.mustCLI("webhook", "list", "--json")
	var hs []struct {
		ID        string
		Events    []string
		Delivered int
	}
	if err := json.Unmarshal([]byte(hooks), &hs); err != nil {
		t.Fatalf("webhook list --json: %v\n%s", err, hooks)
	}
	found := 0
	for _, h := range hs {
		switch h.ID {
		case reportsHook:
			found++
			if h.Delivered != 1 {
				t.Fatalf("the reports subscription got %d deliveries (want the one verification)", h.Delivered)
			}
		case hookID:
			found++
			if strings.Join(h.Events, ",") != "firewall.blocked,firewall.warned" {
				t.Fatalf("the firewall subscription's events: %v", h.Events)
			}
		}
	}
	if found != 2 {
		t.Fatalf("webhook list --json lacks a subscription: %s", hooks)
	}
	if m := d.scrape()["threatd_firewall_decisions_dropped_total"]; m == nil || len(m.Metric) != 1 || m.Metric[0].GetCounter().GetValue() != 0 {
		t.Fatalf("threatd_firewall_decisions_dropped_total: %v", m)
	}
	// Counted in metrics by ecosystem, rule and action.
	m := d.scrape()["threatd_firewall_decisions_total"]
	if m == nil {
		t.Fatal("no threatd_firewall_decisions_total")
	}
	seen := map[string]bool{}
	for _, s := range m.Metric {
		l := map[string]string{}
		for _, p := range s.Label {
			l[p.GetName()] = p.GetValue()
		}
		seen[l["ecosystem"]+"/"+l["rule"]+"/"+l["action"]] = true
	}
	for _, k := range []string{"npm/quarantine/block", "pypi/quarantine/block", "go/quarantine/block", "npm/malicious/waived", "npm/install_scripts/warn"} {
		if !seen[k] {
			t.Errorf("metrics lack %s: %v", k, seen)
		}
	}
}

func quarantineHeld(t *testing.T, f *quarantineFixture) {
	in, tok, reviewer, d, until := f.in, f.tok, f.reviewer, f.d, f.until
	r := d.do("GET", base+"/firewall/held", reviewer, "")
	if r.code != 200 {
		t.Fatalf("held: %d %v", r.code, r.body)
	}
	got := map[string]string{}
	for _, x := range r.body["held"].([]any) {
		h := x.(map[string]any)
		got[fmt.Sprintf("%s %s@%s", h["ecosystem"], h["name"], h["version"])], _ = h["until"].(string)
		// When the firewall first held it: never the zero time.
		if fs, _ := time.Parse(time.RFC3339, h["first_seen"].(string)); fs.Before(time.Now().Add(-time.Hour)) || fs.After(time.Now().Add(time.Minute)) {
			t.Errorf("held %v: first_seen %v", h["name"], h["first_seen"])
		}
	}
	for _, k := range []string{"npm q-pkg@1.1.0", "pypi q-py@1.1.0", "go example.com/qmod@v1.1.0"} {
		if got[k] != until {
			t.Errorf("held %s until %q, want %s (all: %v)", k, got[k], until, got)
		}
	}
	if _, ok := got["npm q-short-lived@2.0.0"]; ok {
		t.Error("q-short-lived 2.0.0 is past its window, yet listed")
	}
	if out := in.mustCLI("firewall", "held"); !strings.Contains(out, "q-pkg@1.1.0") || !strings.Contains(out, until) {
		t.Fatalf("firewall held:\n%s", out)
	}
	if r := d.do("GET", base+"/firewall/held", tok, ""); r.code != 403 {
		t.Fatalf("a submitter lists held versions: %d", r.code)
	}
}
