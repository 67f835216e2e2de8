package main_test

import (
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// TestFirewallPolicyPostgresTwoDaemons: two daemons on one PostgreSQL
// database agree. A waiver made on one (by API) applies on the other
// within cache.freshness, and its removal too; the decisions both make
// are listed once each, and a firewall.blocked subscription receives
// each once (the outbox is shared).
func TestFirewallPolicyPostgresTwoDaemons(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	u := fakeregistry.New(t)
	u.NPMPackageAt(t, "pgq-pkg", "1.1.0", nil, []string{"1.0.0", "1.1.0"}, []time.Time{now.Add(-30 * 24 * time.Hour), now.Add(-time.Minute)}, nil)
	in := pgInstance(t, quiet+"  new_user_max_unverified: 0\n"+hookConfig+fwConfig(u))
	tok := in.user("pg@example.com")
	reviewer := in.user("rev@example.com", "--role", "reviewer")
	admin := in.user("adm@example.com", "--role", "admin")
	recv := newReceiver(t)
	_, secret := addWebhook(t, in, "--url", recv.srv.URL+"/hook", "--events", "firewall.blocked")
	a, b := in.serve(), in.serve()
	tarball := base + "/firewall/npm/pgq-pkg/-/pgq-pkg-1.1.0.tgz"
	// Every answer is a decision: refused (403) or waived (200).
	refused, waived := 0, 0
	get := func(d *daemon) int {
		code, _, _ := d.fwGet(tarball, tok)
		switch code {
		case 403:
			refused++
		case 200:
			waived++
		}
		return code
	}
	for _, d := range []*daemon{a, b} {
		if code, _, body := d.fwGet(tarball, tok); code != 403 || !strings.Contains(string(body), "Held by threatd") {
			t.Fatalf("the new version on a daemon: %d %s", code, body)
		}
	}
	r := a.do("POST", base+"/firewall/waivers", reviewer, `{"ecosystem":"npm","name":"pgq-*","rule":"quarantine","reason":"our own release","for":"1h"}`)
	if r.code != 201 {
		t.Fatalf("waiver on a: %d %v", r.code, r.body)
	}
	refused = 2
	eventually(t, "the waiver made on a applying on b", func() bool { return get(b) == 200 })
	if r := b.do("DELETE", base+"/firewall/waivers/"+r.body["waiver_id"].(string), reviewer, ""); r.code != 204 {
		t.Fatalf("removal on b: %d %v", r.code, r.body)
	}
	eventually(t, "the removal made on b applying on a", func() bool { return get(a) == 403 })
	// Ten refusals on each daemon.
	for i := 0; i < 10; i++ {
		for _, d := range []*daemon{a, b} {
			if code := get(d); code != 403 {
				t.Fatalf("refusal %d: %d", i, code)
			}
		}
	}
	count := func(d *daemon) (blocked, waived int) {
		cursor := ""
		for {
			r := d.do("GET", base+"/firewall/decisions?limit=7"+cursor, admin, "")
			if r.code != 200 {
				t.Fatalf("decisions: %d %v", r.code, r.body)
			}
			for _, x := range r.body["decisions"].([]any) {
				switch x.(map[string]any)["action"] {
				case "block":
					blocked++
				case "waived":
					waived++
				}
			}
			next, _ := r.body["next_cursor"].(string)
			if next == "" {
				return
			}
			cursor = "&cursor=" + next
		}
	}
	apitest.Eventually(t, "every decision listed", 10*time.Second, func() bool {
		blocked, _ := count(a)
		return blocked >= refused
	})
	time.Sleep(time.Second)
	for _, d := range []*daemon{a, b} {
		if blocked, w := count(d); blocked != refused || w != waived {
			t.Fatalf("listed %d blocked and %d waived decisions, want %d and %d", blocked, w, refused, waived)
		}
	}
	apitest.Eventually(t, "the events delivered", 20*time.Second, func() bool { return len(recv.deliveries()) >= refused })
	time.Sleep(500 * time.Millisecond)
	ids := map[string]bool{}
	for _, dl := range recv.deliveries() {
		if dl.Type != "firewall.blocked" || ids[dl.ID] {
			t.Fatalf("delivery %s %s (seen before: %v)", dl.ID, dl.Type, ids[dl.ID])
		}
		ids[dl.ID] = true
		if err := verifyWebhook(secret, map[string][]string{"Webhook-Id": {dl.ID}, "Webhook-Timestamp": {dl.Timestamp}, "Webhook-Signature": {dl.Signature}}, dl.Body, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if len(ids) != refused {
		t.Fatalf("%d events delivered, want %d", len(ids), refused)
	}
}
