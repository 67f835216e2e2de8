package main_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/testbin"
)

// instance is one data directory with its configuration file: what a real
// operator has. CLI commands and daemons run against it as real processes.
type instance struct {
	t       *testing.T
	dir     string
	config  string
	env     []string
	plugins string
	// sqlite: the configuration keeps the default SQLite database, which
	// run creates (threatd migrate) before the first command that would
	// refuse a missing one, as an operator runs make run or migrate first;
	// noAutoMigrate turns that off for tests of the refusal itself.
	sqlite, noAutoMigrate bool
}

// newInstance writes a config file (extra YAML appended to the defaults the
// tests need) into a fresh temporary directory.
func newInstance(t *testing.T, extraYAML string) *instance {
	t.Helper()
	testbin.Dir(t)
	dir := t.TempDir()
	in := &instance{t: t, dir: dir, config: filepath.Join(dir, "threatd.yaml"), plugins: testbin.PluginDir(t),
		sqlite: !strings.Contains(extraYAML, "dsn:") && !strings.Contains(extraYAML, "plugin: postgres")}
	// Metrics on a port of the system's choosing: tests run daemons side by side.
	yaml := fmt.Sprintf("data_dir: %q\nplugins:\n  dir: %q\nmetrics:\n  listen: 127.0.0.1:0\n%s\n", filepath.Join(dir, "data"), in.plugins, extraYAML)
	if err := os.WriteFile(in.config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return in
}

// environ is the environment of every process: the test's, minus THREATD_
// configuration variables, plus the instance's own.
func (in *instance) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "THREATD_") {
			env = append(env, kv)
		}
	}
	return append(env, in.env...)
}

type result struct {
	stdout, stderr string
	code           int
}

// cli runs `threatd ARGS --config FILE` to completion.
func (in *instance) cli(args ...string) result {
	in.t.Helper()
	return in.cliStdin("", args...)
}

// cliStdin runs a command with stdin as its standard input.
func (in *instance) cliStdin(stdin string, args ...string) result {
	in.t.Helper()
	return in.run("", stdin, args...)
}

// cliIn runs a command in the working directory dir.
func (in *instance) cliIn(dir string, args ...string) result {
	in.t.Helper()
	return in.run(dir, "", args...)
}

// run runs a command to completion in dir ("" = the test's).
func (in *instance) run(dir, stdin string, args ...string) result {
	in.t.Helper()
	if in.needsDatabase(args) {
		if r := in.run("", "", "migrate"); r.code != 0 {
			in.t.Fatalf("threatd migrate before %v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	// Generous: tests run side by side on two cores (a scan of every real
	// report then takes minutes); it only stops a hung command.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testbin.Path("threatd"), append(args, "--config", in.config)...)
	cmd.Dir = dir
	cmd.Env = in.environ()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		in.t.Fatalf("threatd %v: %v", args, err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// needsDatabase says whether the default database must be created before
// args run: it is missing, and args is a command that refuses a missing one
// with the instance's own storage settings.
func (in *instance) needsDatabase(args []string) bool {
	if !in.sqlite || in.noAutoMigrate || len(args) == 0 {
		return false
	}
	switch args[0] {
	case "serve", "migrate", "bootstrap", "version", "analyze", "--help", "help":
		return false
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--storage-") || strings.HasPrefix(a, "--data-dir") || a == "--help" {
			return false
		}
	}
	_, err := os.Stat(filepath.Join(in.dir, "data", "threatd.db"))
	return errors.Is(err, os.ErrNotExist)
}

// mustCLI runs a command that must succeed.
func (in *instance) mustCLI(args ...string) string {
	in.t.Helper()
	r := in.cli(args...)
	if r.code != 0 {
		in.t.Fatalf("threatd %v: exit %d\n%s", args, r.code, r.stderr)
	}
	return r.stdout
}

// mustCLIStdin runs a command with standard input that must succeed.
func (in *instance) mustCLIStdin(stdin string, args ...string) string {
	in.t.Helper()
	r := in.cliStdin(stdin, args...)
	if r.code != 0 {
		in.t.Fatalf("threatd %v: exit %d\n%s", args, r.code, r.stderr)
	}
	return r.stdout
}

// user creates a user and returns a fresh token for it.
func (in *instance) user(email string, flags ...string) string {
	in.t.Helper()
	in.mustCLI(append([]string{"user", "add", "--email", email}, flags...)...)
	return strings.TrimSpace(in.mustCLI("token", "issue", "--email", email))
}

// daemon is a running `threatd serve`.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string // https://127.0.0.1:PORT
	client *http.Client
	logMu  sync.Mutex
	log    bytes.Buffer
	exited chan struct{}
	err    error
}

var listening = regexp.MustCompile(`"msg":"threatd listening","address":"([^"]+)"`)

// serve starts the daemon on a free port and waits until it listens.
func (in *instance) serve(extraArgs ...string) *daemon {
	in.t.Helper()
	args := append([]string{"serve", "--config", in.config, "--listen", "127.0.0.1:0"}, extraArgs...)
	cmd := exec.Command(testbin.Path("threatd"), args...)
	cmd.Env = in.environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		in.t.Fatal(err)
	}
	d := &daemon{t: in.t, cmd: cmd, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		in.t.Fatal(err)
	}
	addr, loaded := make(chan string, 1), make(chan struct{})
	go func() {
		loadSeen := false
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			d.logMu.Lock()
			d.log.WriteString(line + "\n")
			d.logMu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
			if !loadSeen && strings.Contains(line, `"msg":"index loaded"`) {
				loadSeen = true
				close(loaded)
			}
		}
		d.err = cmd.Wait()
		close(d.exited)
	}()
	in.t.Cleanup(func() { d.stop() })
	select {
	case a := <-addr:
		scheme := "https"
		if strings.Contains(d.logText(), `"tls":"off"`) {
			scheme = "http"
		}
		d.base = scheme + "://" + a
	case <-d.exited:
		in.t.Fatalf("daemon exited before listening: %v\n%s", d.err, d.logText())
	case <-time.After(3 * time.Minute):
		in.t.Fatalf("daemon did not listen within 3 minutes\n%s", d.logText())
	}
	// The index loads in the background; tests start once it is loaded.
	select {
	case <-loaded:
	case <-d.exited:
		in.t.Fatalf("daemon exited before loading its index: %v\n%s", d.err, d.logText())
	case <-time.After(3 * time.Minute):
		in.t.Fatalf("daemon did not load its index within 3 minutes\n%s", d.logText())
	}
	d.client = in.httpsClient()
	return d
}

// httpsClient trusts exactly the instance's self-signed certificate: the
// tests verify TLS for real, they do not skip verification.
func (in *instance) httpsClient() *http.Client {
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(filepath.Join(in.dir, "data", "tls", "cert.pem")); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	// 3 minutes: a streamed export of every real report, beside other
	// tests on two cores, takes more than a minute; a hung request still
	// ends.
	return &http.Client{Timeout: 3 * time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
}

func (d *daemon) logText() string {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	return d.log.String()
}

// stop sends SIGTERM and waits for the daemon to exit.
func (d *daemon) stop() error {
	select {
	case <-d.exited:
		return d.err
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
		d.t.Errorf("daemon did not stop within 30s of SIGTERM\n%s", d.logText())
	}
	return d.err
}

type response struct {
	code int
	hdr  http.Header
	body map[string]any
	raw  string
}

// do sends one request; token may be empty (apitest.Do: the exchange is
// checked against the OpenAPI document).
func (d *daemon) do(method, path, token, body string, headers ...string) response {
	d.t.Helper()
	r := apitest.Do(d.t, d.client, d.base, method, path, token, body, headers...)
	return response{code: r.Code, hdr: r.Header, body: r.Body, raw: r.Raw}
}

func (r response) expect(t *testing.T, code int, errText string) response {
	t.Helper()
	apitest.Response{Code: r.code, Header: r.hdr, Body: r.body, Raw: r.raw}.Expect(t, code, errText)
	return r
}

// freshness is the default cache.freshness: a change made by another process
// (the CLI) shows in the daemon within it.
const freshness = time.Second

// eventuallyWithin bounds eventually: thirty times the freshness bound,
// for tests run side by side on two cores of a slow, loaded CI machine
// (where ten times was once missed by a firewall test waiting for its
// report to reach the index); TestWebDecisionsAcrossDaemons, which runs
// alone, holds the bound itself.
const eventuallyWithin = 30 * freshness

// eventually retries check until it holds or eventuallyWithin passed.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	apitest.Eventually(t, what, eventuallyWithin, check)
}

// until sends the request until it answers code (within the freshness bound).
func (d *daemon) until(code int, method, path, token, body string) response {
	d.t.Helper()
	var r response
	eventually(d.t, fmt.Sprintf("%s %s answering %d", method, path, code), func() bool {
		r = d.do(method, path, token, body)
		return r.code == code
	})
	return r
}

type rawResponse struct {
	code int
	hdr  http.Header
	body []byte
}

// raw sends a request without a body, with headers (name, value, …), and
// returns the body as bytes (for non-JSON documents).
func (d *daemon) raw(method, path, token string, headers ...string) rawResponse {
	d.t.Helper()
	r := apitest.Raw(d.t, d.client, d.base, method, path, token, headers...)
	return rawResponse{code: r.Code, hdr: r.Header, body: r.Body}
}
