package main_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// docSite is a daemon as the setup pages address it: the host
// threatd.example, the API on port 8443 and images on 5443, a
// certificate that names it (server.tls.names). The clients reach it by
// that name without /etc/hosts: through a CONNECT proxy that resolves
// threatd.example to the loopback address the daemon listens on
// (HTTPS_PROXY, which every client here honours; Bundler reads
// http_proxy), and for Java, which reads no proxy from the environment,
// through a hosts file of its own (-Djdk.net.hosts.file in
// JAVA_TOOL_OPTIONS). The placeholders the
// snippets name are the only things replaced: /etc/threatd/ (the
// directory the certificate is copied to), the daemon's data directory,
// and the upstreams.
type docSite struct {
	in    *instance
	d     *daemon
	tok   string
	ip    string // the loopback address threatd.example stands for
	proxy string // http://127.0.0.1:PORT
	etc   string // stands for /etc/threatd
	hosts string // the hosts file Java reads
	// upstream replaces placeholders of the upstreams in snippets.
	upstream *strings.Replacer
}

// freeLoopback is an address of 127/8 other than 127.0.0.1 on which every
// port of ports is free.
func freeLoopback(t *testing.T, ports ...int) string {
	t.Helper()
	for range 50 {
		ip := fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(250), rand.IntN(256), 1+rand.IntN(250))
		free := true
		for _, p := range ports {
			ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, p))
			if err != nil {
				free = false
				break
			}
			ln.Close()
		}
		if free {
			return ip
		}
	}
	t.Fatal("no loopback address with the ports free")
	return ""
}

// newDocSite starts the daemon of in on ip:8443 (see docSite).
func newDocSite(t *testing.T, in *instance, ip string) *docSite {
	t.Helper()
	s := &docSite{in: in, ip: ip, etc: filepath.Join(t.TempDir(), "etc-threatd"), upstream: strings.NewReplacer()}
	s.tok = in.user("ci@example.com")
	s.d = in.serve("--listen", ip+":8443")
	s.proxy = connectProxy(t, map[string]string{"threatd.example": ip})
	s.hosts = filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(s.hosts, []byte(ip+" threatd.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// paste is a snippet with its placeholders replaced.
func (s *docSite) paste(text string) string {
	text = strings.ReplaceAll(text, "/var/lib/threatd/tls/cert.pem", s.in.certFile())
	text = strings.ReplaceAll(text, "/etc/threatd/", s.etc+"/")
	return s.upstream.Replace(text)
}

// copyCert puts the daemon's certificate where the snippets read it, as
// the fw-cert snippet does on a real machine.
func (s *docSite) copyCert(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(s.in.certFile())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(s.etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.etc, "cert.pem"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// clientEnvDrop are the variables of the test's own environment that
// would change what a client does: each client reads only what the
// snippets set.
var clientEnvDrop = regexp.MustCompile(`^(THREATD_|PIP_|NPM_CONFIG_|npm_config_|GO[A-Z]+=|CARGO_|BUNDLE_|GEM_|MAVEN_|JAVA_TOOL_OPTIONS=|REQUESTS_CA_BUNDLE=|CURL_CA_BUNDLE=|SSL_CERT_|[A-Za-z]+_PROXY=|[a-z]+_proxy=|HOME=|XDG_|VIRTUAL_ENV=|RUNNER_TEMP=)`)

// env is the environment of a client run by a person whose home is home:
// the machine's, without what would change the clients, with the token
// in THREATD_TOKEN and the name threatd.example reachable.
func (s *docSite) env(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if clientEnvDrop.MatchString(kv) {
			continue
		}
		env = append(env, kv)
	}
	real, _ := os.UserHomeDir()
	for _, tool := range []struct{ v, dir string }{{"RUSTUP_HOME", ".rustup"}, {"PYENV_ROOT", ".pyenv"}} {
		// rustup's cargo and pyenv's python find their toolchains under
		// the real home.
		if os.Getenv(tool.v) != "" {
			env = append(env, tool.v+"="+os.Getenv(tool.v))
		} else if st, err := os.Stat(filepath.Join(real, tool.dir)); err == nil && st.IsDir() {
			env = append(env, tool.v+"="+filepath.Join(real, tool.dir))
		}
	}
	return append(env, "HOME="+home, "THREATD_TOKEN="+s.tok,
		"HTTPS_PROXY="+s.proxy, "https_proxy="+s.proxy, "HTTP_PROXY="+s.proxy, "http_proxy="+s.proxy, "NO_PROXY=", "no_proxy=",
		// Java takes its home from the passwd entry, not from HOME.
		"JAVA_TOOL_OPTIONS=-Djdk.net.hosts.file="+s.hosts+" -Duser.home="+home,
		// What is not the snippets' to set: sum.golang.org is not
		// reachable here; module files stay removable; no notices.
		"GOSUMDB=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local",
		"npm_config_update_notifier=false", "npm_config_fund=false", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1",
		"BUNDLE_SILENCE_ROOT_WARNING=1", "GEM_HOME="+filepath.Join(home, ".gem-home"))
}

// bash runs script with bash -eo pipefail (as a person pastes it into a
// shell that stops at the first failure) in dir, returning its output and
// whether it succeeded. The token must never be printed.
func (s *docSite) bash(t *testing.T, dir string, env []string, script string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-eo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("did not finish within 4 minutes:\n%s\n%s", script, out)
	}
	printed, _, _ := strings.Cut(string(out), "\x00=ENV=\x00") // shellEnv's dump of the environment follows
	if strings.Contains(printed, s.tok) {
		t.Errorf("the token is printed in clear by:\n%s\n%s", script, out)
	}
	return string(out), err == nil
}

// connectProxy is an HTTP proxy that tunnels CONNECT host:port to
// hosts[host]:port and refuses every other host: the tests reach nothing
// beyond loopback.
func connectProxy(t *testing.T, hosts map[string]string) string {
	t.Helper()
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, port, err := net.SplitHostPort(r.Host)
		ip, ok := hosts[host]
		if r.Method != http.MethodConnect || err != nil || !ok {
			http.Error(w, "this proxy only tunnels to "+strings.Join(slices.Collect(maps.Keys(hosts)), ", "), http.StatusForbidden)
			return
		}
		up, err := net.DialTimeout("tcp", net.JoinHostPort(ip, port), 10*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			up.Close()
			return
		}
		_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(up, io.MultiReader(buf.Reader, conn))
			_ = up.(*net.TCPConn).CloseWrite()
		}()
		go func() {
			defer wg.Done()
			_, _ = io.Copy(conn, up)
			conn.Close()
			up.Close()
		}()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
