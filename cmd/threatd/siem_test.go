package main_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// TestSIEMToRsyslog: a daemon sends the change feed's verifications,
// revisions and withdrawals (made by the CLI, another process), the
// firewall's decisions and a report's exposure.found event to a real
// rsyslog over TCP in CEF and over TLS as the webhook's JSON; the test
// reads rsyslog's output file. A receiver that is down holds nothing up.
func TestSIEMToRsyslog(t *testing.T) {
	t.Parallel()
	rsyslogd := needRsyslogTLS(t)
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	tcpPort, tlsPort := freePort(t), freePort(t)
	out := filepath.Join(dir, "received.log")
	conf := filepath.Join(dir, "rsyslog.conf")
	text := fmt.Sprintf(`global(workDirectory=%q DefaultNetstreamDriverCAFile=%q DefaultNetstreamDriverCertFile=%q DefaultNetstreamDriverKeyFile=%q)
module(load="imtcp" MaxSessions="10")
template(name="raw" type="string" string="%%msgid%% %%msg%%\n")
input(type="imtcp" address="127.0.0.1" port="%d" ruleset="out")
input(type="imtcp" address="127.0.0.1" port="%d" ruleset="out" StreamDriver.Name="gtls" StreamDriver.Mode="1" StreamDriver.AuthMode="anon")
ruleset(name="out") { action(type="omfile" file=%q template="raw") }
`, dir, cert, cert, key, tcpPort, tlsPort, out)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, rsyslogd, "-n", "-f", conf, "-i", filepath.Join(dir, "rsyslogd.pid"))
	logs := &lockedBuffer{} // rsyslogd writes while a failing test reads
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	for _, p := range []int{tcpPort, tlsPort} {
		deadline := time.Now().Add(20 * time.Second)
		for {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("rsyslogd does not listen on %d:\n%s", p, logs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	received := func(want ...string) bool {
		b, _ := os.ReadFile(out)
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				return false
			}
		}
		return true
	}
	waitFor := func(what string, want ...string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !received(want...) {
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(out)
				t.Fatalf("rsyslog did not receive %s within 15 s; it has:\n%s\nrsyslogd:\n%s", what, b, logs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// TCP, CEF; the firewall's decisions too.
	u := fakeregistry.New(t)
	u.NPMPackage(t, "siem-evil", "1.0.0", "1.0.0")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+fmt.Sprintf("siem: {syslog: {address: \"tcp://127.0.0.1:%d\", format: cef}}\n", tcpPort)+
		fmt.Sprintf("firewall:\n  npm:\n    upstream: %q\n  quarantine:\n    missing_time: allow\n", u.Srv.URL))
	tok := in.user("dev@example.com")
	d := in.serve()
	time.Sleep(2 * freshness) // the feed's position is taken at start
	// Served before the report: its verification finds an exposure.
	if code, _, _ := d.fwGet(base+"/firewall/npm/siem-evil/-/siem-evil-1.0.0.tgz", tok); code != 200 {
		t.Fatalf("the version before its report: %d", code)
	}
	time.Sleep(1500 * time.Millisecond) // the ledger's write, once a second
	evil := fwReport(t, in, d, tok, "npm", "siem-evil", "1.0.0")
	eventually(t, "the firewall refusing the reported version", func() bool {
		code, _, _ := d.fwGet(base+"/firewall/npm/siem-evil/-/siem-evil-1.0.0.tgz", tok)
		return code == 403
	})
	waitFor("the firewall's block", "firewall.blocked CEF:0|threatd|threatd|", "|firewall.blocked|block npm siem-evil@1.0.0 (malicious)|8|",
		"act=block", "request=pkg:npm/siem-evil@1.0.0", "suser=")
	waitFor("the exposure.found event", "exposure.found CEF:0|threatd|threatd|", "|exposure.found|exposure.found "+evil+": 1 exposures|8|",
		"act=exposure.found", "cs1="+evil, "cn1=1")
	id := d.submit(tok, `{"report_type":"domain","resource_identifier":"siem-c2.example","threat_description":"C2 | with = signs","severity_level":"critical"}`)
	in.mustCLI("review", "verify", id)
	waitFor("the verification in CEF", "threat.verified CEF:0|threatd|threatd|", "|threat.verified|verified domain siem-c2.example|10|",
		"cs1="+id, `msg=C2 | with \= signs`, "rt=")
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "cs3Label=ecosystem cs3=npm") ||
		strings.Contains(string(b), "cs3Label=ecosystem request=siem-c2.example") {
		t.Errorf("a custom field's label goes with its value, and without it when it has none:\n%s", b)
	}
	in.mustCLI("review", "reject", id, "--note", "a false positive")
	waitFor("the withdrawal", "|threat.withdrawn|withdrawn domain siem-c2.example|10|")
	_ = d.stop()

	// TLS, JSON.
	in2 := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+
		fmt.Sprintf("siem: {syslog: {address: \"tls://127.0.0.1:%d\", format: json, ca_file: %q}}\n", tlsPort, cert))
	tok2 := in2.user("dev@example.com")
	d2 := in2.serve()
	time.Sleep(2 * freshness)
	id2 := d2.submit(tok2, `{"report_type":"ip","resource_identifier":"203.0.113.77","threat_description":"scanner"}`)
	in2.mustCLI("review", "verify", id2)
	waitFor("the verification as JSON over TLS", `threat.verified {"type":"threat.verified","timestamp":"`, `"id":"`+id2+`"`, `"resource_identifier":"203.0.113.77"`)

	// A receiver that is down: the daemon answers as ever.
	in3 := newInstance(t, quiet+fmt.Sprintf("siem: {syslog: {address: \"tcp://127.0.0.1:%d\"}}\n", freePort(t)))
	tok3 := in3.user("dev@example.com")
	d3 := in3.serve()
	id3 := d3.submit(tok3, `{"report_type":"domain","resource_identifier":"nobody-listens.example","threat_description":"x"}`)
	start := time.Now()
	in3.mustCLI("review", "verify", id3)
	eventually(t, "the report verified with the SIEM down", func() bool {
		return d3.do("GET", base+"/check-malicious?report_type=domain&resource_identifier=nobody-listens.example", tok3, "").body["malicious"] == true
	})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("with the SIEM down, a verification took %s to show", took)
	}
}

// needRsyslogTLS is rsyslogd with its GnuTLS driver (Debian installs
// rsyslog on most servers, rsyslog-gnutls not): missing either, the test
// skips, or fails under CI.
func needRsyslogTLS(t *testing.T) string {
	t.Helper()
	bin := needTool(t, "rsyslogd")
	if m, _ := filepath.Glob("/usr/lib/*/rsyslog/lmnsd_gtls.so"); len(m) == 0 {
		if m, _ := filepath.Glob("/usr/lib/rsyslog/lmnsd_gtls.so"); len(m) == 0 {
			if os.Getenv("CI") == "true" {
				t.Fatal("rsyslog's GnuTLS driver (lmnsd_gtls) is not installed (CI requires it: Debian rsyslog-gnutls)")
			}
			t.Skip("rsyslog's GnuTLS driver is not installed: apt-get install rsyslog-gnutls")
		}
	}
	return bin
}

// freePort is a TCP port of 127.0.0.1 nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// selfSigned writes a certificate for 127.0.0.1 and its key (PEM) into
// dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "syslog-cert.pem"), filepath.Join(dir, "syslog-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
