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

	"golang.org/x/net/dns/dnsmessage"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

// dnsAsk asks the resolver at addr for name's A record over UDP: the
// answer's code and its addresses.
func dnsAsk(addr, name string) (dnsmessage.RCode, string, error) {
	q, err := dnsmessage.NewName(name)
	if err != nil {
		return 0, "", err
	}
	msg := dnsmessage.Message{Header: dnsmessage.Header{ID: 9, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: q, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}}}
	pkt, err := msg.Pack()
	if err != nil {
		return 0, "", err
	}
	c, err := net.Dial("udp", addr)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(pkt); err != nil {
		return 0, "", err
	}
	buf := make([]byte, 1500)
	n, err := c.Read(buf)
	if err != nil {
		return 0, "", err
	}
	var ans dnsmessage.Message
	if err := ans.Unpack(buf[:n]); err != nil {
		return 0, "", err
	}
	var addrs []string
	for _, a := range ans.Answers {
		if r, ok := a.Body.(*dnsmessage.AResource); ok {
			addrs = append(addrs, net.IP(r.A[:]).String())
		}
	}
	return ans.Header.RCode, strings.Join(addrs, ","), nil
}

// freeUDPPort is a UDP port of 127.0.0.1 free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.LocalAddr().(*net.UDPAddr).Port
}

// startResolver runs a resolver in the foreground until the test ends,
// waits until it answers name with rcode, and returns its output.
func startResolver(t *testing.T, addr string, args []string, name string, rcode dnsmessage.RCode) *lockedBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, _, err := dnsAsk(addr, name)
		if err == nil && got == rcode {
			return logs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %s with %v within 30 s (%v %v):\n%s", args[0], name, rcode, got, err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestBlocklistDocSnippets: docs/blocklists.md's snippets as written:
// curl fetches the zone by name with the token and the certificate; the
// operator's export writes it; Unbound, configured as the page says,
// answers NXDOMAIN for a reported domain, and the cron line (token from
// the header file) brings a newly reported domain in through
// unbound-control, is silent when nothing changed and loud when the token
// is wrong; named, in Debian's layout with the page's two lines, answers
// NXDOMAIN too; suricata-update fetches the rules as a source of its own.
// Machine paths (/etc/unbound, /etc/bind, /var/lib/suricata) are
// directories of the test.
func TestBlocklistDocSnippets(t *testing.T) {
	t.Parallel()
	const doc = "docs/blocklists.md"
	snip := func(name string) string { return docSnippet(t, doc, "snippet", name) }
	ip := freeLoopback(t, 8443)
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\nserver:\n  tls:\n    names: [\"threatd.example\"]\n")
	s := newDocSite(t, in, ip)
	s.copyCert(t)
	unboundDir, bindDir, suricataDir := t.TempDir(), t.TempDir(), t.TempDir()
	paste := func(text string) string {
		return strings.NewReplacer("/etc/unbound/", unboundDir+"/", "/etc/bind/", bindDir+"/", "/var/lib/suricata", suricataDir).Replace(s.paste(text))
	}
	operator := fmt.Sprintf("threatd() { command %q \"$@\" --config %q; }\n", testbin.Path("threatd"), in.config)
	home := t.TempDir()
	env := s.env(home)
	run := func(t *testing.T, script string) string {
		t.Helper()
		out, ok := s.bash(t, t.TempDir(), env, script)
		if !ok {
			t.Fatalf("fails as pasted:\n%s\n%s", script, out)
		}
		return out
	}
	report := func(domain string) {
		id := s.d.submit(s.tok, `{"report_type":"domain","resource_identifier":"`+domain+`","threat_description":"Command and control"}`)
		in.mustCLI("review", "verify", id)
		eventually45s(t, domain+" on the lists", func() bool {
			r := s.d.raw("GET", base+"/blocklists/domains", s.tok)
			return r.code == 200 && strings.Contains(string(r.body), domain)
		})
	}
	report("c2.first.example")

	if out := run(t, paste(snip("bl-fetch"))); !strings.Contains(out, "c2.first.example CNAME .") {
		t.Fatalf("bl-fetch printed no zone:\n%s", out)
	}
	run(t, operator+paste(snip("bl-export")))
	if zone := readFile(t, filepath.Join(unboundDir, "threatd.rpz")); !strings.Contains(zone, "*.c2.first.example CNAME .") {
		t.Fatalf("bl-export wrote:\n%s", zone)
	}
	run(t, paste(snip("bl-token")))
	if st, err := os.Stat(filepath.Join(s.etc, "blocklist.header")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the header file: %v %v", st, err)
	}
	// The cron line's command: the schedule and the user dropped.
	var cron string
	for _, line := range strings.Split(paste(snip("bl-cron")), "\n") {
		if f := strings.Fields(line); len(f) > 6 && !strings.HasPrefix(line, "#") {
			cron = strings.Join(f[6:], " ")
		}
	}
	if cron == "" {
		t.Fatal("bl-cron has no crontab line")
	}

	t.Run("unbound", func(t *testing.T) {
		bin := needTool(t, "unbound")
		needTool(t, "unbound-control")
		port := freeUDPPort(t)
		writeFiles(t, unboundDir, map[string]string{
			"unbound.conf.d/threatd.conf": paste(snip("bl-unbound")),
			// What Debian's unbound.conf and remote-control.conf hold, on a
			// port and socket of the test's, without root.
			"unbound.conf": fmt.Sprintf("server:\n  interface: 127.0.0.1\n  port: %d\n  do-ip6: no\n  do-tcp: no\n  do-daemonize: no\n  chroot: \"\"\n  username: \"\"\n  directory: %q\n  pidfile: \"\"\n  use-syslog: no\n  logfile: \"\"\n  access-control: 127.0.0.0/8 allow\n  do-not-query-localhost: no\nforward-zone:\n  name: \".\"\n  forward-addr: 127.0.0.1@%d\nremote-control:\n  control-enable: yes\n  control-interface: %s\ninclude: %q\n",
				port, unboundDir, freeUDPPort(t), filepath.Join(unboundDir, "unbound.ctl"), filepath.Join(unboundDir, "unbound.conf.d/threatd.conf")),
		})
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		startResolver(t, addr, []string{bin, "-d", "-c", filepath.Join(unboundDir, "unbound.conf")}, "sub.c2.first.example.", dnsmessage.RCodeNameError)
		report("c2.second.example")
		if rc, _, err := dnsAsk(addr, "c2.second.example."); err == nil && rc == dnsmessage.RCodeNameError {
			t.Fatalf("before the cron line ran, c2.second.example: %v", rc)
		}
		if out := run(t, cron); out != "" {
			t.Errorf("the cron line printed (cron would mail it):\n%s", out)
		}
		eventually(t, "Unbound reloading the new zone", func() bool {
			rc, _, err := dnsAsk(addr, "c2.second.example.")
			return err == nil && rc == dnsmessage.RCodeNameError
		})
		// Nothing changed: silent, and the zone is kept.
		if out, _ := s.bash(t, t.TempDir(), env, cron); out != "" {
			t.Errorf("the cron line, nothing changed, printed:\n%s", out)
		}
		// A wrong token: loud, and the zone is kept.
		if err := os.WriteFile(filepath.Join(s.etc, "blocklist.header"), []byte("Authorization: Bearer thd_wrong\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, ok := s.bash(t, t.TempDir(), env, cron); ok || !strings.Contains(out, "401") {
			t.Errorf("the cron line with a wrong token (ok=%v) printed:\n%s", ok, out)
		}
		if rc, _, err := dnsAsk(addr, "c2.second.example."); err != nil || rc != dnsmessage.RCodeNameError {
			t.Errorf("after a failed fetch, c2.second.example: %v %v", rc, err)
		}
	})

	t.Run("bind", func(t *testing.T) {
		named := needTool(t, "named")
		port := freeUDPPort(t)
		// Debian's layout, copied: named.conf and its includes, on a port
		// and directory of the test's.
		files, _ := filepath.Glob("/etc/bind/*")
		for _, f := range files {
			if strings.HasSuffix(f, ".key") && !strings.HasSuffix(f, "bind.keys") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.ReplaceAll(string(b), "/etc/bind/", bindDir+"/")
			switch filepath.Base(f) {
			case "named.conf":
				text += "controls { };\n"
			case "named.conf.options":
				text = strings.Replace(text, `directory "/var/cache/bind";`, fmt.Sprintf("directory %q;\n\tpid-file none;\n\tsession-keyfile %q;\n\tlisten-on port %d { 127.0.0.1; };", bindDir, filepath.Join(bindDir, "session.key"), port), 1)
				// Nothing beyond loopback: recursion goes to a closed port.
				text = strings.Replace(text, "listen-on-v6 { any; };", fmt.Sprintf("listen-on-v6 { none; };\n\tforwarders { 127.0.0.1 port %d; };\n\tforward only;", freeUDPPort(t)), 1)
				// The page's line, inside the options block.
				end := strings.LastIndex(text, "};")
				var add []string
				for _, l := range strings.Split(paste(snip("bl-bind-options")), "\n") {
					if !strings.HasPrefix(strings.TrimSpace(l), "//") {
						add = append(add, l)
					}
				}
				text = text[:end] + strings.Join(add, "\n") + "\n" + text[end:]
			case "named.conf.local":
				text += "\n" + paste(snip("bl-bind-local"))
			}
			if err := os.WriteFile(filepath.Join(bindDir, filepath.Base(f)), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(filepath.Join(bindDir, "named.conf.options")); err != nil {
			t.Skip("Debian's bind9 configuration is not in /etc/bind")
		}
		run(t, operator+"threatd export blocklist --format rpz --out "+filepath.Join(bindDir, "threatd.rpz"))
		if out, err := exec.Command("named-checkconf", "-z", filepath.Join(bindDir, "named.conf")).CombinedOutput(); err != nil {
			t.Fatalf("named-checkconf -z: %v\n%s", err, out)
		}
		startResolver(t, fmt.Sprintf("127.0.0.1:%d", port), []string{named, "-g", "-c", filepath.Join(bindDir, "named.conf")}, "www.c2.first.example.", dnsmessage.RCodeNameError)
	})

	t.Run("suricata", func(t *testing.T) {
		needTool(t, "suricata-update")
		if err := os.MkdirAll(filepath.Join(suricataDir, "rules"), 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, paste(snip("bl-suricata-fetch")))
		if rules := readFile(t, filepath.Join(suricataDir, "rules", "threatd.rules")); !strings.Contains(rules, `content:".c2.first.example"`) {
			t.Fatalf("bl-suricata-fetch wrote:\n%s", rules)
		}
		run(t, paste(snip("bl-suricata-update")))
		if rules := readFile(t, filepath.Join(suricataDir, "rules", "suricata.rules")); !strings.Contains(rules, `content:".c2.first.example"`) {
			t.Fatalf("suricata-update wrote no threatd rule:\n%.2000s", rules)
		}
	})
}
