package main_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSIEMDocSnippets: docs/siem.md's daemon configuration and rsyslog
// receiver, as written (the receiver's host, port and files are the
// test's): the daemon's messages arrive over TLS, and a report with a
// 20,000-character description arrives as one whole CEF message, its
// text cut with the marker, never as rsyslog's broken fragment.
func TestSIEMDocSnippets(t *testing.T) {
	t.Parallel()
	const doc = "docs/siem.md"
	rsyslogd := needRsyslogTLS(t)
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	port := freePort(t)
	out := filepath.Join(dir, "threatd-siem.log")
	conf := strings.NewReplacer(
		"/etc/rsyslog.d/tls/ca.pem", cert, "/etc/rsyslog.d/tls/cert.pem", cert, "/etc/rsyslog.d/tls/key.pem", key,
		"/var/log/threatd-siem.log", out,
		`input(type="imtcp" port="6514"`, fmt.Sprintf(`input(type="imtcp" address="127.0.0.1" port="%d"`, port),
	).Replace(docSnippet(t, doc, "snippet", "siem-rsyslog"))
	if !strings.Contains(conf, fmt.Sprintf(`port="%d"`, port)) {
		t.Fatalf("the rsyslog snippet has no input on port 6514:\n%s", conf)
	}
	writeFiles(t, dir, map[string]string{"rsyslog.conf": conf})
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, rsyslogd, "-n", "-f", filepath.Join(dir, "rsyslog.conf"), "-i", filepath.Join(dir, "rsyslogd.pid"))
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rsyslogd does not listen on %d:\n%s", port, logs.String())
		}
	}

	siem := strings.NewReplacer("siem.example.com:6514", fmt.Sprintf("127.0.0.1:%d", port), "/etc/threatd/siem-ca.pem", cert).
		Replace(docSnippet(t, doc, "snippet", "siem-config"))
	in := newInstance(t, mergeYAML(t, quiet+"  new_user_max_unverified: 0\n", siem))
	tok := in.user("dev@example.com")
	d := in.serve()
	time.Sleep(2 * freshness) // the feed's position is taken at start
	long := strings.Repeat("The stealer reads ~/.npmrc and posts it. ", 500)[:20000]
	id := d.submit(tok, `{"report_type":"domain","resource_identifier":"siem-doc-c2.example","threat_description":"`+long+`","severity_level":"critical"}`)
	in.mustCLI("review", "verify", id)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(out)
		var line string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "cs1="+id) {
				line = l
			}
		}
		if line != "" {
			if !strings.HasPrefix(line, "threat.verified CEF:0|threatd|threatd|") || !strings.Contains(line, "|threat.verified|verified domain siem-doc-c2.example|10|") ||
				!strings.Contains(line, "…[truncated by threatd: ") || len(line) > 8000 {
				t.Fatalf("the long report's message (%d bytes):\n%.600s", len(line), line)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rsyslog did not receive the verification within 20 s; it has:\n%.2000s\nrsyslogd:\n%s", b, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
