package main_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/storage/pgtest"
)

// TestWebhooksTwoDaemonsOnPostgres: a burst of 1,000 published reports (an
// import) with two daemons on one PostgreSQL database: each event reaches
// the receiver exactly once.
func TestWebhooksTwoDaemonsOnPostgres(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	dsn := pgtest.Server(t).Database(t, t.Name())
	in := newInstance(t, fmt.Sprintf("storage:\n  plugin: postgres\n  dsn: %q\n", dsn)+quiet+hookConfig)
	in.mustCLI("migrate")
	addWebhook(t, in, "--url", r.srv.URL)
	a, b := in.serve(), in.serve()
	dir := t.TempDir()
	const n = 1000
	for i := range n {
		id := fmt.Sprintf("MAL-2026-%d", 90000+i)
		if err := os.WriteFile(filepath.Join(dir, id+".json"), testbin.OSVRecord(id, "npm", fmt.Sprintf("burst-%d", i), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in.mustCLI("import", "osv", dir)
	apitest.Eventually(t, "1,000 deliveries", 3*time.Minute, func() bool { return len(r.deliveries()) >= n })
	time.Sleep(time.Second) // a duplicate would come now
	seen := map[string]int{}
	reports := map[string]bool{}
	for _, g := range r.deliveries() {
		seen[g.ID]++
		reports[g.ThreatID] = true
		if g.Type != "threat.verified" || g.Status != 200 {
			t.Fatalf("delivery %+v", g)
		}
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("event %s delivered %d times", id, c)
		}
	}
	if len(seen) != n || len(reports) != n {
		t.Fatalf("%d events about %d reports, want %d", len(seen), len(reports), n)
	}
	fa := value(a.scrape(), "threatd_webhook_deliveries_total", map[string]string{"outcome": "delivered"})
	fb := value(b.scrape(), "threatd_webhook_deliveries_total", map[string]string{"outcome": "delivered"})
	if max(fa, 0)+max(fb, 0) != n {
		t.Fatalf("deliveries counted by the daemons: %v + %v", fa, fb)
	}
}

// pyReceiver runs docs/examples/webhook_receiver.py (which docs/webhooks.md
// shows) as a subscription's target and checks that it accepts a delivery.
func pyReceiver(t *testing.T, in *instance, d *daemon, tok string) {
	t.Helper()
	py := needTool(t, "python3")
	script, _ := filepath.Abs("../../docs/examples/webhook_receiver.py")
	page, err := os.ReadFile("../../docs/webhooks.md")
	code, _ := os.ReadFile(script)
	if err != nil || !strings.Contains(string(page), "```python\n"+string(code)+"```") {
		t.Fatal("docs/webhooks.md does not show docs/examples/webhook_receiver.py as it is")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port, for the receiver
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := strings.Cut(addr, ":")
	hook, secret := addWebhook(t, in, "--url", "http://"+addr+"/hook")
	defer in.mustCLI("webhook", "remove", hook)
	cmd := exec.Command(py, script)
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret, "PORT="+port)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if l := <-lines; l != "listening on "+port {
		t.Fatalf("the Python receiver said %q", l)
	}
	rid := d.submit(tok, pkg("hooked-python"))
	in.mustCLI("review", "verify", rid)
	select {
	case l := <-lines:
		if !regexp.MustCompile(`^threat\.verified msg_[0-9a-f]{32} ` + rid + ` hooked-python$`).MatchString(l) {
			t.Fatalf("the Python receiver printed %q", l)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the Python receiver got no delivery")
	}
}
