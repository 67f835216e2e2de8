package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// TestBlocklists: over real HTTPS, the block lists carry the domains, URL
// hosts and addresses verified reports name (a report's own resource and
// the indicators in its text), never a pending report's or a code host;
// each format answers with an ETag and 304 for it; a withdrawal takes a
// name off within the change feed's freshness; threatd export blocklist
// writes the bytes the daemon serves; and an Unbound started here with
// the RPZ zone answers NXDOMAIN for a reported domain and its subdomains
// while it answers an unreported name from a local zone.
func TestBlocklists(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\nblocklists: {rpz_zone: \"rpz.test-block.\"}\n")
	tok := in.user("dev@example.com")
	d := in.serve()

	list := func(format string, headers ...string) response {
		t.Helper()
		var r rawResponse
		eventually(t, "the block lists built", func() bool {
			r = d.raw("GET", base+"/blocklists/"+format, tok, headers...)
			return r.code != 503
		})
		return response{code: r.code, hdr: r.hdr, raw: string(r.body)}
	}
	domainID := d.submit(tok, `{"report_type":"domain","resource_identifier":"C2.Evil-Updates.example","threat_description":"Command and control of a credential stealer"}`)
	pkgID := d.submit(tok, `{"report_type":"package","resource_identifier":"stealy","registry":"npm","threat_description":"Steals tokens",`+
		`"payload_description":"Downloads hxxps://drop[.]bad-cdn[.]example/stage2.sh and hxxps://github[.]com/evil/repo/raw/x.sh, then posts to 198.51.100.23."}`)
	ipID := d.submit(tok, `{"report_type":"ip","resource_identifier":"203.0.113.50","threat_description":"Scanner"}`)
	d.submit(tok, `{"report_type":"domain","resource_identifier":"pending-only.example","threat_description":"not verified"}`)
	for _, id := range []string{domainID, pkgID, ipID} {
		in.mustCLI("review", "verify", id)
	}
	eventually(t, "the verified reports on the lists", func() bool {
		return strings.Contains(list("domains").raw, "c2.evil-updates.example") && strings.Contains(list("ips").raw, "203.0.113.50")
	})
	domains := list("domains")
	if domains.code != 200 || domains.hdr.Get("Content-Type") != "text/plain; charset=utf-8" || domains.hdr.Get("ETag") == "" {
		t.Fatalf("domains: %d %v\n%s", domains.code, domains.hdr, domains.raw)
	}
	for _, want := range []string{"c2.evil-updates.example\n", "drop.bad-cdn.example\n"} {
		if !strings.Contains(domains.raw, want) {
			t.Errorf("domains lack %q:\n%s", want, domains.raw)
		}
	}
	for _, never := range []string{"github.com", "pending-only.example", "stealy"} {
		if strings.Contains(domains.raw, never) {
			t.Errorf("domains list %q:\n%s", never, domains.raw)
		}
	}
	if ips := list("ips"); ips.code != 200 || !strings.Contains(ips.raw, "\n198.51.100.23\n203.0.113.50\n") {
		t.Errorf("ips: %d\n%s", ips.code, ips.raw)
	}
	// The ETag: 304 for it, 200 for another.
	if r := list("domains", "If-None-Match", domains.hdr.Get("ETag")); r.code != 304 || r.raw != "" {
		t.Errorf("If-None-Match with the ETag: %d %q", r.code, r.raw)
	}
	if r := list("domains", "If-None-Match", `"stale"`); r.code != 200 {
		t.Errorf("If-None-Match with another ETag: %d", r.code)
	}
	d.do("GET", base+"/blocklists/bind", tok, "").expect(t, 404, `No block list "bind": the formats are rpz, hosts, domains, dnsmasq, unbound, adguard, ips`)
	if r := d.raw("GET", base+"/blocklists/hosts", ""); r.code != 401 {
		t.Errorf("without a token: %d %s", r.code, r.body)
	}

	// Every format from the daemon is what the CLI writes.
	served := map[string]string{}
	for _, f := range []string{"rpz", "hosts", "domains", "dnsmasq", "unbound", "adguard", "ips"} {
		r := list(f)
		if r.code != 200 {
			t.Fatalf("%s: %d %s", f, r.code, r.raw)
		}
		served[f] = r.raw
		out := in.mustCLI("export", "blocklist", "--format", f)
		if out != r.raw {
			t.Errorf("%s: threatd export blocklist wrote\n%s\nthe daemon served\n%s", f, out, r.raw)
		}
	}
	for f, want := range map[string]string{"hosts": "0.0.0.0 c2.evil-updates.example\n", "dnsmasq": "address=/c2.evil-updates.example/\n",
		"unbound": "local-zone: \"c2.evil-updates.example.\" always_nxdomain\n", "adguard": "||c2.evil-updates.example^\n",
		"rpz": "c2.evil-updates.example CNAME .\n*.c2.evil-updates.example CNAME .\n"} {
		if !strings.Contains(served[f], want) {
			t.Errorf("%s lacks %q:\n%s", f, want, served[f])
		}
	}
	if !strings.Contains(served["rpz"], "$ORIGIN rpz.test-block.\n") {
		t.Errorf("the RPZ zone is not named by blocklists.rpz_zone:\n%s", served["rpz"])
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "threatd.rpz")
	in.mustCLI("export", "blocklist", "--format", "rpz", "--out", out)
	if b, err := os.ReadFile(out); err != nil || string(b) != served["rpz"] {
		t.Fatalf("--out: %v\n%s", err, b)
	}
	if r := in.cli("export", "blocklist", "--format", "bind"); r.code == 0 || !strings.Contains(r.stderr, "format") {
		t.Errorf("an unknown format: exit %d %s", r.code, r.stderr)
	}

	// A real resolver with the zone.
	resolve := unboundWithRPZ(t, dir, out)
	for name, want := range map[string]dnsmessage.RCode{
		"c2.evil-updates.example.":     dnsmessage.RCodeNameError,
		"www.c2.evil-updates.example.": dnsmessage.RCodeNameError,
		"drop.bad-cdn.example.":        dnsmessage.RCodeNameError,
		"ok.fine.example.":             dnsmessage.RCodeSuccess,
	} {
		if got, addrs := resolve(name); got != want || want == dnsmessage.RCodeSuccess && addrs != "192.0.2.10" {
			t.Errorf("unbound: %s answered %v %s, want %v", name, got, addrs, want)
		}
	}

	// A withdrawal takes the name off, and the ETag moves.
	in.mustCLI("review", "reject", domainID, "--note", "a false positive")
	eventually(t, "the withdrawn report's domain off the lists", func() bool {
		return !strings.Contains(list("domains").raw, "c2.evil-updates.example")
	})
	if r := list("domains", "If-None-Match", domains.hdr.Get("ETag")); r.code != 200 || !strings.Contains(r.raw, "drop.bad-cdn.example") {
		t.Errorf("after the withdrawal, the old ETag: %d\n%s", r.code, r.raw)
	}
}

// unboundWithRPZ starts Unbound on a free port of 127.0.0.1 with the RPZ
// zone file and a local zone (ok.fine.example is 192.0.2.10), and returns
// a function that asks it for a name's A record.
func unboundWithRPZ(t *testing.T, dir, zone string) func(name string) (dnsmessage.RCode, string) {
	t.Helper()
	bin := needTool(t, "unbound")
	port := freeUDPPort(t)
	conf := filepath.Join(dir, "unbound.conf")
	text := fmt.Sprintf(`server:
  interface: 127.0.0.1
  port: %d
  do-ip6: no
  do-tcp: no
  do-daemonize: no
  chroot: ""
  username: ""
  directory: %q
  pidfile: ""
  use-syslog: no
  logfile: ""
  verbosity: 1
  access-control: 127.0.0.0/8 allow
  module-config: "respip iterator"
  local-zone: "fine.example." static
  local-data: "ok.fine.example. A 192.0.2.10"
rpz:
  name: "rpz.test-block."
  zonefile: %q
`, port, dir, zone)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logs := startResolver(t, addr, []string{bin, "-d", "-c", conf}, "ok.fine.example.", dnsmessage.RCodeSuccess)
	return func(name string) (dnsmessage.RCode, string) {
		rc, addrs, err := dnsAsk(addr, name)
		if err != nil {
			t.Fatalf("asking unbound for %s: %v\n%s", name, err, logs.String())
		}
		return rc, addrs
	}
}

// TestSuricataRules: over real HTTPS, the Suricata rules carry an alert
// dns, tls and http rule per reported domain and an alert ip rule per
// address, their sids from blocklists.suricata_sid_base and their
// messages naming the report; an approved revision of the report moves
// its rules' rev and not their sids; a restarted daemon serves the same
// bytes; threatd export suricata writes them too.
func TestSuricataRules(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\nblocklists: {suricata_sid_base: 5000000}\n")
	tok := in.user("dev@example.com")
	d := in.serve()
	rules := func(headers ...string) rawResponse {
		t.Helper()
		var r rawResponse
		eventually(t, "the rules built", func() bool {
			r = d.raw("GET", base+"/rules/suricata.rules", tok, headers...)
			return r.code != 503
		})
		return r
	}
	domainID := d.submit(tok, `{"report_type":"domain","resource_identifier":"c2.evil-updates.example","threat_description":"Command and control"}`)
	ipID := d.submit(tok, `{"report_type":"ip","resource_identifier":"203.0.113.50","threat_description":"Scanner"}`)
	for _, id := range []string{domainID, ipID} {
		in.mustCLI("review", "verify", id)
	}
	eventually(t, "both reports in the rules", func() bool {
		b := string(rules().body)
		return strings.Contains(b, domainID) && strings.Contains(b, ipID)
	})
	first := rules()
	body := string(first.body)
	if first.code != 200 || first.hdr.Get("Content-Type") != "text/plain; charset=utf-8" || first.hdr.Get("ETag") == "" {
		t.Fatalf("rules: %d %v\n%s", first.code, first.hdr, body)
	}
	// The domain's three rules take the first three sids, the address the
	// next (in the order the rules were first given numbers: domains first).
	for _, want := range []string{
		`alert dns any any -> any any (msg:"threatd: DNS query for reported domain c2.evil-updates.example (threat ` + domainID + `)"; dns.query; dotprefix; content:".c2.evil-updates.example"; nocase; endswith; classtype:trojan-activity; sid:5000000; rev:1; metadata:threatd_threat ` + domainID + ";)\n",
		`alert tls any any -> any any (msg:"threatd: TLS SNI of reported domain c2.evil-updates.example (threat ` + domainID + `)"; tls.sni; dotprefix; content:".c2.evil-updates.example"; nocase; endswith; classtype:trojan-activity; sid:5000001; rev:1;`,
		`alert http any any -> any any (msg:"threatd: HTTP Host of reported domain c2.evil-updates.example (threat ` + domainID + `)"; http.host; dotprefix; content:".c2.evil-updates.example"; nocase; endswith; classtype:trojan-activity; sid:5000002; rev:1;`,
		`alert ip any any <> 203.0.113.50 any (msg:"threatd: traffic with reported address 203.0.113.50 (threat ` + ipID + `)"; classtype:trojan-activity; sid:5000003; rev:1; metadata:threatd_threat ` + ipID + ";)\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the rules lack\n%s\n%s", want, body)
		}
	}
	if r := rules("If-None-Match", first.hdr.Get("ETag")); r.code != 304 || len(r.body) != 0 {
		t.Errorf("If-None-Match with the ETag: %d %q", r.code, r.body)
	}
	if out := in.mustCLI("export", "suricata"); out != body {
		t.Errorf("threatd export suricata wrote\n%s\nthe daemon served\n%s", out, body)
	}
	if r := d.raw("GET", base+"/rules/suricata.rules", ""); r.code != 401 {
		t.Errorf("without a token: %d %s", r.code, r.body)
	}

	// An approved revision of the domain's report: rev 2, the same sids.
	d.do("PUT", base+"/modify-threat-report", tok, fmt.Sprintf(`{"threat_id":%q,"threat_description":"Command and control of a stealer"}`, domainID)).expect(t, 200, "")
	m := revLine.FindStringSubmatch(in.mustCLI("review", "list"))
	if m == nil {
		t.Fatal("no pending revision listed")
	}
	in.mustCLI("review", "approve-revision", m[1])
	eventually(t, "the revision in the rules", func() bool { return strings.Contains(string(rules().body), "sid:5000000; rev:2;") })
	revised := string(rules().body)
	for _, want := range []string{"sid:5000001; rev:2;", "sid:5000002; rev:2;", "sid:5000003; rev:1;"} {
		if !strings.Contains(revised, want) {
			t.Errorf("after the revision the rules lack %q:\n%s", want, revised)
		}
	}
	out := filepath.Join(t.TempDir(), "threatd.rules")
	in.mustCLI("export", "suricata", "--out", out)
	if b, err := os.ReadFile(out); err != nil || string(b) != revised {
		t.Fatalf("--out: %v\n%s", err, b)
	}

	// A restart: the same sids and revs.
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	d = in.serve()
	if again := string(rules().body); again != revised {
		t.Errorf("after a restart:\n%s\nbefore:\n%s", again, revised)
	}
}
