package main_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// verifyWebhook checks a delivery as a receiver written in Go does
// (docs/webhooks.md quotes it): the headers are there, the timestamp is
// within five minutes, and one v1 signature is the HMAC-SHA256 of
// "id.timestamp.body" keyed by the secret's bytes.
func verifyWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	id, stamp, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || stamp == "" || sigs == "" {
		return errors.New("missing webhook headers")
	}
	ts, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil || now.Sub(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return errors.New("timestamp out of tolerance")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.", id, stamp)
	mac.Write(body)
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(sigs) {
		if v, ok := strings.CutPrefix(sig, "v1,"); ok && hmac.Equal([]byte(v), []byte(want)) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

// receiver is a webhook target on 127.0.0.1: it records every request and
// answers what answer says (200 when nil).
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []delivery
	answer func(d delivery, n int) int // n: the requests with this webhook-id so far, this one included
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := delivery{ID: req.Header.Get("webhook-id"), Timestamp: req.Header.Get("webhook-timestamp"), Signature: req.Header.Get("webhook-signature"), Body: body}
		var env struct {
			Type string `json:"type"`
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &env)
		d.Type, d.ThreatID = env.Type, env.Data.ID
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
			d.Type = "bad request: " + req.Method + " " + req.Header.Get("Content-Type")
		}
		r.mu.Lock()
		n := 1
		for _, g := range r.got {
			if g.ID == d.ID {
				n++
			}
		}
		d.Status = 200
		if r.answer != nil {
			d.Status = r.answer(d, n)
		}
		r.got = append(r.got, d)
		r.mu.Unlock()
		w.WriteHeader(d.Status)
		fmt.Fprintf(w, "answer %d", d.Status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// delivered returns the accepted deliveries of this type about this report.
func (r *receiver) delivered(typ, threatID string) []delivery {
	var out []delivery
	for _, d := range r.deliveries() {
		if d.Type == typ && d.ThreatID == threatID && d.Status/100 == 2 {
			out = append(out, d)
		}
	}
	return out
}

var secretLine = regexp.MustCompile(`(?m)^id: (\S+)\nsecret: (whsec_\S+)$`)

// addWebhook runs `threatd webhook add` and returns the id and secret.
func addWebhook(t *testing.T, in *instance, args ...string) (string, string) {
	t.Helper()
	m := secretLine.FindStringSubmatch(in.mustCLI(append([]string{"webhook", "add"}, args...)...))
	if m == nil {
		t.Fatal("webhook add printed no id and secret")
	}
	return m[1], m[2]
}

const hookConfig = "webhooks:\n  allow_private: true\n  retry_base: 100ms\n  retry_max: 400ms\n  poll: 50ms\n  timeout: 2s\n"

// verifyWithNPM checks deliveries with the Standard Webhooks project's own
// JavaScript library (an implementation independent of ours), and checks
// that it refuses each with its body tampered and with a stale timestamp.
func verifyWithNPM(t *testing.T, secret string, ds []delivery) {
	t.Helper()
	needTool(t, "node")
	dir, _ := filepath.Abs("testdata/scan-tools")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the standardwebhooks npm package is not installed: make scan-tools")
		}
		t.Skip("the standardwebhooks npm package is not installed: make scan-tools")
	}
	type msg struct {
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
		Want    bool              `json:"want"`
	}
	var msgs []msg
	for _, d := range ds {
		h := map[string]string{"webhook-id": d.ID, "webhook-timestamp": d.Timestamp, "webhook-signature": d.Signature}
		msgs = append(msgs, msg{h, string(d.Body), true})
		msgs = append(msgs, msg{h, strings.Replace(string(d.Body), `"type":"threat.`, `"type":"threat.x`, 1), false})
		ts, _ := strconv.ParseInt(d.Timestamp, 10, 64)
		stale := map[string]string{"webhook-id": d.ID, "webhook-timestamp": fmt.Sprint(ts - 3600), "webhook-signature": d.Signature}
		msgs = append(msgs, msg{stale, string(d.Body), false})
	}
	in, _ := json.Marshal(map[string]any{"secret": secret, "messages": msgs})
	script := `
const { Webhook } = require("standardwebhooks");
let input = "";
process.stdin.on("data", (c) => (input += c)).on("end", () => {
  const { secret, messages } = JSON.parse(input);
  const wh = new Webhook(secret);
  const out = messages.map((m) => {
    try { wh.verify(m.body, m.headers); return "ok"; } catch (e) { return e.message; }
  });
  console.log(JSON.stringify(out));
});`
	cmd := exec.Command("node", "-e", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v %s", err, out)
	}
	var results []string
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(msgs) {
		t.Fatalf("node answered %s", out)
	}
	for i, m := range msgs {
		if (results[i] == "ok") != m.Want {
			t.Fatalf("standardwebhooks on message %d (want accepted=%v): %s\nheaders %v\nbody %s", i, m.Want, results[i], m.Headers, m.Body)
		}
	}
}
