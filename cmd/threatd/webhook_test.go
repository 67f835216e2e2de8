package main_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
)

// hookJSON and attemptJSON read `webhook list --json` and `webhook
// deliveries --json`.
type hookJSON struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	Events         []string `json:"events"`
	Ecosystem      string   `json:"ecosystem"`
	State          string   `json:"state"`
	DisabledReason string   `json:"disabled_reason"`
	Pending        int64    `json:"pending"`
	Delivered      int64    `json:"delivered"`
	Failed         int64    `json:"failed"`
	Expired        int64    `json:"expired"`
}

type attemptJSON struct {
	WebhookID string  `json:"webhook_id"`
	Event     string  `json:"event"`
	ThreatID  string  `json:"threat_id"`
	Status    int     `json:"status"`
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error"`
	State     string  `json:"state"`
}

// delivery is one request a receiver got.
type delivery struct {
	ID, Timestamp, Signature string
	Body                     []byte
	Type                     string
	ThreatID                 string
	Status                   int
}

// TestWebhooks: subscriptions through the CLI, the three events signed as
// Standard Webhooks (checked by the project's own library), retries with
// the same webhook-id, filters, a kill -9 between commit and delivery, a
// subscription disabled after its retry window, and the metrics.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	other := newReceiver(t)
	in := newInstance(t, quiet+hookConfig+"  retry_window: 4s\n  max_pending: 2\n")
	tok := in.user("hooks@example.com")

	// Refused subscriptions say why.
	strict := newInstance(t, "")
	for _, c := range []struct{ args, want string }{
		{"--url " + r.srv.URL, "127.0.0.1 is a loopback address; set webhooks.allow_private"},
		{"--url ftp://example.com/x", "must be an http or https URL"},
		{"--url https://example.com/x --events threat.created", `unknown event "threat.created"`},
		{"--url https://example.com/x --ecosystem cobol", "must be a package registry"},
	} {
		res := strict.cli(append([]string{"webhook", "add"}, strings.Fields(c.args)...)...)
		if res.code == 0 || !strings.Contains(res.stderr, c.want) {
			t.Fatalf("webhook add %s: exit %d, %s", c.args, res.code, res.stderr)
		}
	}

	// Added while no daemon runs: events committed before the daemon
	// starts are delivered when it does.
	all, secret := addWebhook(t, in, "--url", r.srv.URL+"/all")
	pypiOnly, _ := addWebhook(t, in, "--url", other.srv.URL+"/pypi", "--events", "threat.withdrawn,threat.revised", "--ecosystem", "PyPI")
	list := in.mustCLI("webhook", "list", "--json")
	var hooks []hookJSON
	if err := json.Unmarshal([]byte(list), &hooks); err != nil || len(hooks) != 2 || hooks[0].ID != all || hooks[0].State != "active" ||
		strings.Join(hooks[0].Events, ",") != "threat.verified,threat.revised,threat.withdrawn" || hooks[1].Ecosystem != "pypi" || strings.Contains(list, "whsec_") {
		t.Fatalf("webhook list --json: %v\n%s", err, list)
	}

	d := in.serve()
	// The first delivery is refused twice, then accepted.
	r.mu.Lock()
	r.answer = func(d delivery, n int) int {
		if n <= 2 {
			return 500
		}
		return 204
	}
	r.mu.Unlock()
	npmID := d.submit(tok, pkg("hooked-npm"))
	in.mustCLI("review", "verify", npmID)
	apitest.Eventually(t, "the verification's delivery", 15*time.Second, func() bool { return len(r.delivered("threat.verified", npmID)) == 1 })
	var tries []delivery
	for _, g := range r.deliveries() {
		if g.ThreatID == npmID {
			tries = append(tries, g)
		}
	}
	if len(tries) != 3 || tries[0].ID != tries[2].ID || tries[0].Status != 500 || tries[1].Status != 500 || tries[2].Status != 204 || string(tries[0].Body) != string(tries[2].Body) {
		t.Fatalf("attempts: %+v", tries)
	}
	var env struct {
		Type      string         `json:"type"`
		Timestamp time.Time      `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(tries[2].Body, &env); err != nil || env.Type != "threat.verified" || env.Data["status"] != "verified" ||
		env.Data["resource_identifier"] != "hooked-npm" || env.Timestamp.IsZero() || !strings.HasPrefix(tries[2].ID, "msg_") {
		t.Fatalf("body %s: %v", tries[2].Body, err)
	}
	r.mu.Lock()
	r.answer = nil
	r.mu.Unlock()
	var attempts []attemptJSON
	if err := json.Unmarshal([]byte(in.mustCLI("webhook", "deliveries", all, "--json")), &attempts); err != nil || len(attempts) != 3 ||
		attempts[0].Status != 204 || attempts[0].State != "delivered" || attempts[2].Status != 500 || attempts[2].Error != "HTTP 500: answer 500" ||
		attempts[2].State != "pending" || attempts[0].WebhookID != tries[0].ID || attempts[0].Event != "threat.verified" || attempts[0].LatencyMS <= 0 {
		t.Fatalf("webhook deliveries: %+v %v", attempts, err)
	}
	if out := in.mustCLI("webhook", "deliveries", all); !strings.Contains(out, "WEBHOOK-ID") || !strings.Contains(out, "HTTP 500: answer 500") {
		t.Fatalf("webhook deliveries table:\n%s", out)
	}

	// Revised and withdrawn, and the ecosystem filter.
	pypiID := d.submit(tok, `{"report_type":"package","resource_identifier":"hooked-py","registry":"pypi","threat_description":"Steals keys"}`)
	in.mustCLI("review", "verify", pypiID)
	d.do("PUT", base+"/modify-threat-report", tok, fmt.Sprintf(`{"threat_id":%q,"severity_level":"critical"}`, pypiID)).expect(t, 200, "")
	m := revLine.FindStringSubmatch(in.mustCLI("review", "list"))
	if m == nil || m[3] != pypiID {
		t.Fatal("the revision is not pending")
	}
	in.mustCLI("review", "approve-revision", m[1])
	in.mustCLI("review", "reject", pypiID, "--note", "a false positive", "--version", "2")
	in.mustCLI("review", "reject", npmID, "--note", "a false positive")
	apitest.Eventually(t, "the revision and withdrawals", 15*time.Second, func() bool {
		return len(r.delivered("threat.revised", pypiID)) == 1 && len(r.delivered("threat.withdrawn", pypiID)) == 1 &&
			len(r.delivered("threat.withdrawn", npmID)) == 1 && len(other.delivered("threat.withdrawn", pypiID)) == 1
	})
	if g := other.deliveries(); len(g) != 2 || g[0].Type != "threat.revised" || g[1].Type != "threat.withdrawn" {
		t.Fatalf("the PyPI subscription (revised and withdrawn only) got %+v", g)
	}
	var rev struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(r.delivered("threat.revised", pypiID)[0].Body, &rev)
	if rev.Data["severity_level"] != "critical" {
		t.Fatalf("revised event data: %v", rev.Data)
	}
	for _, g := range r.deliveries() {
		h := http.Header{}
		h.Set("webhook-id", g.ID)
		h.Set("webhook-timestamp", g.Timestamp)
		h.Set("webhook-signature", g.Signature)
		if err := verifyWebhook(secret, h, g.Body, time.Now()); err != nil {
			t.Fatalf("delivery %s: %v", g.ID, err)
		}
		if err := verifyWebhook(secret, h, append([]byte(" "), g.Body...), time.Now()); err == nil {
			t.Fatal("a tampered body verified")
		}
		if err := verifyWebhook(secret, h, g.Body, time.Now().Add(10*time.Minute)); err == nil {
			t.Fatal("a stale delivery verified")
		}
	}
	verifyWithNPM(t, secret, r.delivered("threat.withdrawn", npmID))
	verifyWithNPM(t, secret, r.delivered("threat.verified", npmID))

	// The Python receiver of docs/webhooks.md verifies and takes a delivery.
	pyReceiver(t, in, d, tok)

	// kill -9 with an event committed and its delivery failing: the next
	// daemon delivers it, under the same webhook-id.
	r.mu.Lock()
	r.answer = func(delivery, int) int { return 503 }
	r.mu.Unlock()
	killedID := d.submit(tok, pkg("hooked-kill"))
	in.mustCLI("review", "verify", killedID)
	apitest.Eventually(t, "a failed attempt", 10*time.Second, func() bool {
		for _, g := range r.deliveries() {
			if g.ThreatID == killedID {
				return true
			}
		}
		return false
	})
	plugin := pluginPID(t, d.logText())
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	// Its storage plugin follows it (it holds the SQLite lock until then;
	// on a busy machine that takes a moment).
	waitGone(t, plugin)
	r.mu.Lock()
	r.answer = nil
	r.mu.Unlock()
	d2 := in.serve()
	apitest.Eventually(t, "delivery by the next daemon", 20*time.Second, func() bool { return len(r.delivered("threat.verified", killedID)) == 1 })
	if first := r.deliveries(); first[len(first)-1].ID != r.delivered("threat.verified", killedID)[0].ID {
		t.Fatal("the retried delivery changed its webhook-id")
	}
	for _, g := range r.deliveries() {
		if g.ThreatID == killedID && g.ID != r.delivered("threat.verified", killedID)[0].ID {
			t.Fatalf("two webhook-ids for one event: %+v", g)
		}
	}

	// A target that keeps failing for the retry window (4s here) is
	// disabled, says so, and keeps at most max_pending (2) events.
	dead, _ := addWebhook(t, in, "--url", "http://127.0.0.1:1/closed")
	for i := range 4 {
		id := d2.submit(tok, pkg(fmt.Sprintf("hooked-dead-%d", i)))
		in.mustCLI("review", "verify", id)
	}
	defer func() {
		if t.Failed() {
			t.Log(in.mustCLI("webhook", "list"))
			t.Log(d2.logText())
		}
	}()
	deadHook := func(ok func(h hookJSON) bool) func() bool {
		return func() bool {
			var hs []hookJSON
			_ = json.Unmarshal([]byte(in.mustCLI("webhook", "list", "--json")), &hs)
			for _, h := range hs {
				if h.ID == dead {
					return ok(h)
				}
			}
			return false
		}
	}
	// An event whose own retry window ended before the subscription was
	// disabled failed instead of expiring: which of the first two did
	// depends on when the dispatcher ran (both failed once under -race
	// on a loaded machine).
	apitest.Eventually(t, "the failing subscription to be disabled and its queue bounded", 30*time.Second, deadHook(func(h hookJSON) bool {
		return h.State == "disabled" && h.Pending == 2 && h.Expired+h.Failed == 2
	}))
	// An event for the disabled subscription pushes its oldest out.
	in.mustCLI("review", "verify", d2.submit(tok, pkg("hooked-dead-4")))
	apitest.Eventually(t, "an event past the disabled subscription's bound to expire the oldest", 30*time.Second, deadHook(func(h hookJSON) bool {
		return h.State == "disabled" && h.Pending == 2 && h.Expired >= 1 && h.Expired+h.Failed == 3
	}))
	if out := in.mustCLI("webhook", "list"); !regexp.MustCompile(dead + `.*disabled \(failing since 20\d\d-.*Z: dial tcp 127.0.0.1:1: connect: connection refused\)`).MatchString(out) {
		t.Fatalf("webhook list does not say why it is disabled:\n%s", out)
	}
	if out := in.mustCLI("webhook", "deliveries", dead); !strings.Contains(out, "connection refused") {
		t.Fatalf("deliveries of the dead target:\n%s", out)
	}
	fams := d2.scrape()
	if value(fams, "threatd_webhook_deliveries_total", map[string]string{"outcome": "delivered"}) < 1 ||
		value(fams, "threatd_webhook_deliveries_total", map[string]string{"outcome": "retry"}) < 1 ||
		value(fams, "threatd_webhook_events_expired_total", nil) < 1 || value(fams, "threatd_webhook_queue_depth", nil) < 2 ||
		value(fams, "threatd_webhook_oldest_pending_seconds", nil) <= 0 {
		t.Fatalf("webhook metrics: delivered %v retry %v expired %v depth %v oldest %v",
			value(fams, "threatd_webhook_deliveries_total", map[string]string{"outcome": "delivered"}),
			value(fams, "threatd_webhook_deliveries_total", map[string]string{"outcome": "retry"}),
			value(fams, "threatd_webhook_events_expired_total", nil), value(fams, "threatd_webhook_queue_depth", nil),
			value(fams, "threatd_webhook_oldest_pending_seconds", nil))
	}
	if strings.Contains(d2.logText(), secret) || strings.Contains(d.logText(), secret) {
		t.Fatal("a signing secret is in the daemon's log")
	}
	// A target's path and query (often its secret) never reach the log:
	// the disabled subscription is logged by scheme and host.
	if log := d2.logText(); strings.Contains(log, "/closed") || !strings.Contains(log, `"url":"http://127.0.0.1:1/…"`) {
		t.Fatalf("the disabled target's URL is logged with its path, or not at all:\n%s", log)
	}
	// The administrators' page lists them, adds one (secret shown once: the
	// page escapes a "+" of the base64 secret as &#43;),
	// enables and removes; a submitter may not see it.
	in.user("root@example.com", "--role", "admin")
	in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "root@example.com")
	in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "hooks@example.com")
	admin := in.browser(d2)
	admin.get("/login")
	admin.post("/login", url.Values{"email": {"root@example.com"}, "password": {"correct horse battery"}, "next": {"/admin/webhooks"}}).
		expect(t, 200, "Webhooks", r.srv.URL+"/all", dead, "disabled: failing since", "connection refused")
	admin.post("/admin/webhooks", url.Values{"url": {"ftp://example.com/x"}}).expect(t, 400, "must be an http or https URL")
	added := admin.post("/admin/webhooks", url.Values{"url": {other.srv.URL + "/web"}, "events": {"threat.withdrawn"}, "ecosystem": {"npm"}}).
		expect(t, 200, "shown only this once", "whsec_", other.srv.URL+"/web")
	if m := regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`).FindString(html.UnescapeString(added.body)); m == "" || strings.Contains(in.mustCLI("webhook", "list", "--json"), m) {
		t.Fatal("the new secret is not shown, or is listed again")
	}
	admin.post("/admin/webhooks/"+dead+"/enable", url.Values{}).expect(t, 200, "Webhooks")
	if out := in.mustCLI("webhook", "list"); !regexp.MustCompile(dead + `.*(active|failing)`).MatchString(out) {
		t.Fatalf("enabled on the web page:\n%s", out)
	}
	admin.post("/admin/webhooks/"+dead+"/remove", url.Values{}).expect(t, 200, "Webhooks")
	if strings.Contains(in.mustCLI("webhook", "list"), dead) {
		t.Fatal("removed on the web page but still listed")
	}
	dev := in.browser(d2)
	dev.get("/login")
	dev.post("/login", url.Values{"email": {"hooks@example.com"}, "password": {"correct horse battery"}, "next": {"/admin/webhooks"}}).
		expect(t, 403, "for administrators")

	in.mustCLI("webhook", "remove", pypiOnly)
	if res := in.cli("webhook", "remove", dead); res.code == 0 || !strings.Contains(res.stderr, "no webhook subscription") {
		t.Fatalf("removing twice: %d %s", res.code, res.stderr)
	}
	if res := in.cli("webhook", "deliveries", dead); res.code == 0 || !strings.Contains(res.stderr, "no webhook subscription") {
		t.Fatalf("deliveries of a removed one: %d %s", res.code, res.stderr)
	}
}
