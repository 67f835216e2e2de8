package main_test

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/testbin"
)

const base = "/functions/v1"

var tokenShape = regexp.MustCompile(`^thd_[0-9A-Za-z]{38}$`)

func TestTokenIssuePrintsOnlyTheToken(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "")
	in.mustCLI("user", "add", "--email", "Alice@Example.com", "--name", "Alice")
	r := in.cli("token", "issue", "--email", "alice@example.com", "--name", "ci")
	if r.code != 0 || !tokenShape.MatchString(strings.TrimSuffix(r.stdout, "\n")) || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout %q (exit %d, stderr %s): want the token alone on one line", r.stdout, r.code, r.stderr)
	}
	// Only the hash is stored: the token text appears nowhere in the data directory.
	tok := strings.TrimSpace(r.stdout)
	filepath.Walk(filepath.Join(in.dir, "data"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte(tok)) || bytes.Contains(b, []byte(tok[4:])) {
				t.Errorf("%s contains the token in clear", p)
			}
		}
		return nil
	})
}

func TestCLIErrors(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "")
	in.mustCLI("user", "add", "--email", "bob@example.com")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"user", "add", "--email", "bob@example.com"}, "user already exists: bob@example.com"},
		{[]string{"user", "add", "--email", "not-an-email"}, "invalid --email"},
		{[]string{"user", "add", "--email", "x@example.com", "--tier", "gold"}, "invalid --tier"},
		{[]string{"user", "add"}, `required flag(s) "email" not set`},
		{[]string{"token", "issue", "--email", "nobody@example.com"}, "user not found: nobody@example.com"},
		{[]string{"token", "revoke", "--token", "thd_nonsense"}, "invalid --token"},
		{[]string{"user", "set-limit", "--email", "bob@example.com", "--submissions-per-hour", "-3"}, "non-negative"},
		{[]string{"user", "set-limit", "--email", "nobody@example.com", "--submissions-per-hour", "3"}, "user not found"},
	}
	for _, c := range cases {
		r := in.cli(c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("threatd %v: exit %d stdout %q stderr %q; want failure mentioning %q", c.args, r.code, r.stdout, r.stderr, c.want)
		}
	}
	out := in.mustCLI("user", "set-limit", "--email", "bob@example.com", "--submissions-per-hour", "50")
	if !strings.Contains(out, "50") {
		t.Fatalf("set-limit output %q", out)
	}
	// Flags may come before or after the subcommand's words.
	in.mustCLI("--config", in.config, "user", "add", "--email", "carol@example.com")

	// Users added without --name are named user-<the id's first 8
	// characters>, never after their e-mail, and apart though created
	// in the same second.
	var users []map[string]any
	if err := json.Unmarshal([]byte(in.mustCLI("user", "list", "--json")), &users); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, u := range users {
		name, _ := u["name"].(string)
		if !regexp.MustCompile(`^user-[0-9a-f]{8}$`).MatchString(name) || names[name] {
			t.Errorf("%s is named %q, want user- and 8 hex characters of its own", u["email"], name)
		}
		names[name] = true
	}
}

func TestAuthAndRateLimitHeaders(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "limits:\n  per_token_per_minute: {free: 5, paid: 50}\n  per_ip_per_minute: 0\n")
	free := in.user("free@example.com")
	paid := in.user("paid@example.com", "--tier", "paid")
	d := in.serve()

	r := d.do("GET", base+"/account", "", "").expect(t, 401, "Authorization required")
	if r.hdr.Get("RateLimit-Limit") != "" {
		t.Fatal("401 carries RateLimit headers")
	}
	for _, bad := range []string{"thd_nope", free[:len(free)-2] + "zz", "thd_" + strings.Repeat("a", 38), "Basic " + free} {
		r := d.do("GET", base+"/account", bad, "").expect(t, 401, "Invalid API token")
		if r.hdr.Get("RateLimit-Limit") != "" {
			t.Fatal("401 carries RateLimit headers")
		}
	}
	// The token is accepted only in the header, never in the query string.
	d.do("GET", base+"/account?token="+free+"&apikey="+free, "", "").expect(t, 401, "Authorization required")

	apitest.ClearOfWindowEdge(t, time.Minute, 10*time.Second)
	for i := 1; i <= 5; i++ {
		r := d.do("GET", base+"/account", free, "").expect(t, 200, "")
		reset, _ := strconv.Atoi(r.hdr.Get("RateLimit-Reset"))
		if r.hdr.Get("RateLimit-Limit") != "5" || r.hdr.Get("RateLimit-Remaining") != strconv.Itoa(5-i) || reset < 1 || reset > 60 {
			t.Fatalf("request %d headers: %v", i, r.hdr)
		}
		if r.body["email"] != "free@example.com" || r.body["tier"] != "free" || r.body["role"] != "submitter" {
			t.Fatalf("account: %v", r.body)
		}
	}
	r = d.do("GET", base+"/account", free, "").expect(t, 429, "Rate limit exceeded for this API token: the limit is 5 requests per minute; try again later")
	if ra, _ := strconv.Atoi(r.hdr.Get("Retry-After")); ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", r.hdr.Get("Retry-After"))
	}
	if r.hdr.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("429 headers %v", r.hdr)
	}
	// Another token has its own budget, with its tier's limit.
	r = d.do("GET", base+"/account", paid, "").expect(t, 200, "")
	if r.hdr.Get("RateLimit-Limit") != "50" || r.body["tier"] != "paid" {
		t.Fatalf("paid: %v %v", r.hdr, r.body)
	}

	// Revoked through the CLI while the daemon serves: refused within the
	// freshness bound, and from then on.
	in.mustCLI("token", "revoke", "--token", paid)
	d.until(401, "GET", base+"/account", paid, "").expect(t, 401, "Invalid API token")

	// No token reaches the log.
	if log := d.logText(); strings.Contains(log, free) || strings.Contains(log, paid) || strings.Contains(log, free[4:20]) {
		t.Fatal("a token appears in the daemon log")
	}
}

func TestOrderOverRealHTTPS(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "limits:\n  per_ip_per_minute: 3\n")
	tok := in.user("a@example.com")
	d := in.serve()
	apitest.ClearOfWindowEdge(t, time.Minute, 10*time.Second)
	d.do("GET", "/healthz", "", "").expect(t, 200, "")
	d.do("GET", base+"/account", "", "").expect(t, 401, "Authorization required")
	d.do("GET", base+"/account", tok, "").expect(t, 200, "")
	// The per-IP budget is spent: a wrong method still gets 405 first ...
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"} {
		r := d.do(m, base+"/account", tok, "")
		if r.code != 405 {
			t.Fatalf("%s: %d %s, want 405", m, r.code, r.raw)
		}
		if m != "HEAD" && r.body["error"] != "Method not allowed" {
			t.Fatalf("%s: %v", m, r.body)
		}
	}
	// ... then the per-IP limit, before authentication.
	r := d.do("GET", base+"/account", "", "").expect(t, 429, "Rate limit exceeded for your IP address: try again later")
	if r.hdr.Get("Retry-After") == "" {
		t.Fatal("per-IP 429 without Retry-After")
	}
	d.do("GET", base+"/account", tok, "").expect(t, 429, "")
}

func TestHealthzAndPluginLog(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "")
	d := in.serve()
	r := d.do("GET", "/healthz", "", "").expect(t, 200, "")
	plugins, _ := r.body["plugins"].(map[string]any)
	st, _ := plugins["storage"].(map[string]any)
	if r.body["status"] != "ok" || st["plugin"] != "sqlite" || st["status"] != "ok" {
		t.Fatalf("healthz %v", r.body)
	}
	if idx, _ := r.body["index"].(map[string]any); idx["verified_reports"] != float64(0) || idx["feed_seq"] == nil {
		t.Fatalf("healthz index: %v", r.body)
	}
	// healthz is at the root, not under the base path.
	d.do("GET", base+"/healthz", "", "").expect(t, 404, "")
	// The plugin's own stderr arrives in the daemon's structured log.
	if !regexp.MustCompile(`\{"time":"[^"]+","level":"INFO","msg":"storage configured","plugin":"threatd-storage-sqlite".*"backend":"sqlite"`).MatchString(d.logText()) {
		t.Fatalf("plugin log line not forwarded:\n%s", d.logText())
	}
	if !strings.Contains(d.logText(), `"msg":"request","method":"GET","path":"/healthz","status":200`) {
		t.Fatalf("no structured request log:\n%s", d.logText())
	}
	if r.hdr.Get("X-Request-Id") == "" {
		t.Fatal("no request id")
	}
}

func TestMissingPluginRefusesToStart(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "")
	in.env = []string{"THREATD_PLUGINS__DIR=" + t.TempDir()}
	r := in.cli("serve", "--listen", "127.0.0.1:0")
	if r.code == 0 || !strings.Contains(r.stderr, `storage plugin "sqlite" not found`) || !strings.Contains(r.stderr, "threatd-storage-sqlite does not exist") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	in.env = nil
	r = in.cli("serve", "--listen", "127.0.0.1:0", "--storage-plugin", "mysql")
	if r.code == 0 || !strings.Contains(r.stderr, `storage plugin "mysql" not found`) {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestWrongProtocolPluginRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := testbin.Build("./cmd/threatd/testdata/wrongproto", filepath.Join(dir, "threatd-storage-v2")); err != nil {
		t.Fatal(err)
	}
	in := newInstance(t, "")
	tmp := t.TempDir()
	in.env = []string{"THREATD_PLUGINS__DIR=" + dir, "THREATD_STORAGE__PLUGIN=v2", "TMPDIR=" + tmp, "THREATD_TEST_SECRET=hunter2"}
	r := in.cli("serve", "--listen", "127.0.0.1:0")
	if r.code == 0 || !strings.Contains(r.stderr, `storage plugin "v2"`) || !strings.Contains(r.stderr, "incompatible plugin protocol: this daemon speaks version 2, the plugin version 3") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	// The plugin inherited the passed variables, not the daemon's others.
	environ, err := os.ReadFile(filepath.Join(tmp, "plugin-environ"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(environ), "TMPDIR="+tmp) || strings.Contains(string(environ), "hunter2") || strings.Contains(string(environ), "THREATD_STORAGE__PLUGIN") {
		t.Fatalf("the plugin's environment:\n%s", environ)
	}
}

func TestInvalidConfigNamesKey(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "limits:\n  store: redis\n")
	r := in.cli("serve")
	if r.code == 0 || !strings.Contains(r.stderr, "limits.store") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	in = newInstance(t, "")
	in.env = []string{"THREATD_SERVER__TLS__MODE=sometimes"}
	r = in.cli("migrate")
	if r.code == 0 || !strings.Contains(r.stderr, "server.tls.mode") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}

func TestRestartKeepsDataAndCertificate(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "")
	tok := in.user("keep@example.com", "--name", "Keeper", "--tier", "paid")
	in.mustCLI("user", "set-limit", "--email", "keep@example.com", "--submissions-per-hour", "77")
	d := in.serve()
	r := d.do("GET", base+"/account", tok, "").expect(t, 200, "")
	cert1, _ := os.ReadFile(filepath.Join(in.dir, "data", "tls", "cert.pem"))

	pid := pluginPID(t, d.logText())
	if err := d.stop(); err != nil {
		t.Fatalf("daemon exit after SIGTERM: %v\n%s", err, d.logText())
	}
	if !strings.Contains(d.logText(), "threatd stopped") || !strings.Contains(d.logText(), `"msg":"plugin stopped"`) {
		t.Fatalf("no clean shutdown in log:\n%s", d.logText())
	}
	waitGone(t, pid)

	d2 := in.serve()
	r2 := d2.do("GET", base+"/account", tok, "").expect(t, 200, "")
	if r2.body["name"] != "Keeper" || r2.body["tier"] != "paid" {
		t.Fatalf("after restart: %v", r2.body)
	}
	limits := r2.body["limits"].(map[string]any)
	if limits["submissions_per_hour_override"] != float64(77) || r.body["token"].(map[string]any)["id"] != r2.body["token"].(map[string]any)["id"] {
		t.Fatalf("after restart: %v", r2.body)
	}
	cert2, _ := os.ReadFile(filepath.Join(in.dir, "data", "tls", "cert.pem"))
	if len(cert1) == 0 || !bytes.Equal(cert1, cert2) {
		t.Fatal("self-signed certificate was not reused on restart")
	}
	if strings.Contains(d2.logText(), "generated a self-signed TLS certificate") {
		t.Fatal("certificate regenerated on restart")
	}
}

func TestBootstrapOnlyOnNewDatabase(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "")
	r := in.cli("bootstrap", "--email", "root@example.com")
	tok := strings.TrimSpace(r.stdout)
	if r.code != 0 || !tokenShape.MatchString(tok) {
		t.Fatalf("bootstrap: %+v", r)
	}
	r = in.cli("bootstrap", "--email", "root@example.com")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "already has 1 user") {
		t.Fatalf("second bootstrap: %+v", r)
	}
	d := in.serve()
	acc := d.do("GET", base+"/account", tok, "").expect(t, 200, "")
	if acc.body["role"] != "admin" {
		t.Fatalf("bootstrap user: %v", acc.body)
	}
}

func TestTLSOffIsLoud(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "server:\n  tls:\n    mode: \"off\"\n")
	d := in.serve()
	if !strings.HasPrefix(d.base, "http://") {
		t.Fatalf("base %s", d.base)
	}
	if !regexp.MustCompile(`"level":"WARN","msg":"TLS IS OFF`).MatchString(d.logText()) {
		t.Fatalf("no loud warning:\n%s", d.logText())
	}
	d.do("GET", "/healthz", "", "").expect(t, 200, "")
}

func TestTLSFiles(t *testing.T) {
	t.Parallel()
	// A certificate made by one instance's self-signed mode serves another in files mode.
	gen := newInstance(t, "")
	gen.serve().stop()
	certDir := filepath.Join(gen.dir, "data", "tls")
	in := newInstance(t, "server:\n  tls:\n    mode: files\n    cert_file: "+filepath.Join(certDir, "cert.pem")+"\n    key_file: "+filepath.Join(certDir, "key.pem")+"\n")
	d := in.serve()
	d.client = gen.httpsClient()
	d.do("GET", "/healthz", "", "").expect(t, 200, "")
}

var pidRe = regexp.MustCompile(`"msg":"plugin started","plugin":"threatd-storage-sqlite","path":"[^"]*","pid":(\d+)`)

func pluginPID(t *testing.T, log string) int {
	m := pidRe.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no plugin pid in log:\n%s", log)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// pluginPIDs lists every storage plugin pid the log names, in order.
func pluginPIDs(log string) []int {
	var out []int
	for _, m := range pidRe.FindAllStringSubmatch(log, -1) {
		pid, _ := strconv.Atoi(m[1])
		out = append(out, pid)
	}
	return out
}

// waitGone waits until process pid no longer exists.
func waitGone(t *testing.T, pid int) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("plugin process %d still running after the daemon stopped", pid)
}

// A client that leaves before or during the TLS handshake (a probe, a port
// scanner) is logged at debug, not as a server error; the server still
// answers the next client.
func TestAbandonedHandshakeIsNotAnError(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "log:\n  level: debug\n")
	d := in.serve()
	addr := strings.TrimPrefix(d.base, "https://")
	for _, payload := range []string{"", "GET / HTTP/1.0\r\n\r\n"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(payload))
		c.Close()
	}
	eventually(t, "the handshake errors at debug", func() bool {
		return strings.Count(d.logText(), `"level":"DEBUG","msg":"http: TLS handshake error`) == 2
	})
	if strings.Contains(d.logText(), `"level":"ERROR"`) {
		t.Fatalf("an abandoned handshake logged an error:\n%s", d.logText())
	}
	d.do("GET", "/healthz", "", "").expect(t, 200, "")
}

// TestTLSNamesAddedLater: a name added to server.tls.names after the
// certificate was made is covered after the next start (the certificate
// is made again), and a client that trusts the new file reaches the
// daemon by that name, through a proxy as another machine would.
func TestTLSNamesAddedLater(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "server:\n  tls:\n    names: [\"first.example\"]\n")
	d := in.serve()
	cert1, _ := os.ReadFile(in.certFile())
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(in.config)
	if err := os.WriteFile(in.config, bytes.Replace(cfg, []byte(`["first.example"]`), []byte(`["first.example", "second.example"]`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	d = in.serve()
	cert2, _ := os.ReadFile(in.certFile())
	if bytes.Equal(cert1, cert2) || !strings.Contains(d.logText(), "generated a self-signed TLS certificate") {
		t.Fatal("the certificate was not made again for the added name")
	}
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(d.base, "https://"))
	proxy, _ := url.Parse(connectProxy(t, map[string]string{"first.example": host, "second.example": host}))
	c := in.httpsClient()
	c.Transport.(*http.Transport).Proxy = http.ProxyURL(proxy)
	for _, name := range []string{"first.example", "second.example"} {
		res, err := c.Get("https://" + name + ":" + port + "/livez")
		if err != nil {
			t.Fatalf("a client trusting the certificate, by the name %s: %v", name, err)
		}
		res.Body.Close()
	}
}
