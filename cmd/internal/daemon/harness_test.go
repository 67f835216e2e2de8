package daemon_test

// The middle test tier: the daemon assembled in process (daemon.New, as
// threatd serve assembles it) over the SQLite plugin's store, reached
// through the real gRPC shims of the storage protocol (go-plugin's
// in-process connection), serving real HTTPS from an httptest server. What
// needs real processes (real package managers, a plugin that crashes, the
// browser, PostgreSQL, two daemons, the CLI) stays in cmd/threatd.

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/daemon"
	"github.com/threatd/threatd/cmd/internal/sqliteplugin"
	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/api"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/plugins/plugintest"
)

const (
	base = "/functions/v1"
	// quiet turns the per-minute limits off: a test sends as fast as it
	// likes unless it tests them.
	quiet = "limits:\n  per_ip_per_minute: 0\n  per_token_per_minute: {free: 0, paid: 0}\n"
	// eventuallyWithin bounds eventually: thirty times the default
	// cache.freshness (1 s), for tests run side by side on two cores of
	// a slow, loaded CI machine.
	eventuallyWithin = 30 * time.Second
)

// server is one daemon in process over its own data directory.
type server struct {
	t      *testing.T
	dir    string
	cfg    config.Config
	store  port.Store
	base   string // https://127.0.0.1:PORT
	client *http.Client
	logs   *logBuffer
	stop   func()
}

// start assembles and serves a daemon whose configuration is extraYAML over
// the defaults (exporters: none unless extraYAML names them), and waits
// until its index is loaded.
func start(t *testing.T, extraYAML string) *server {
	t.Helper()
	return startIn(t, t.TempDir(), extraYAML)
}

// startIn starts a daemon on dir's data directory (a second start after
// s.stop() finds the first one's data).
func startIn(t *testing.T, dir, extraYAML string) *server {
	t.Helper()
	yaml := fmt.Sprintf("data_dir: %q\nplugins:\n  dir: %q\n", filepath.Join(dir, "data"), testbin.PluginDir(t))
	if !strings.Contains(extraYAML, "exporters:") {
		yaml += "exporters: []\n"
	}
	path := filepath.Join(dir, "threatd.yaml")
	if err := os.WriteFile(path, []byte(yaml+extraYAML+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, []string{}, nil, nil) // not the test's environment
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The SQLite plugin's own opening (its lock, its integrity check),
	// as threatd serve configures it.
	st := plugintest.Storage(t, "sqlite", sqliteplugin.Open, plugins.StorageConfig{DataDir: cfg.DataDir, Settings: cfg.Storage.Settings, Create: true, Exclusive: true})

	ctx, cancel := context.WithCancel(context.Background())
	d, err := daemon.New(ctx, daemon.Options{Config: cfg, Store: st, Log: log, Metrics: api.NewMetrics("test"), Version: "test"})
	if err != nil {
		cancel()
		t.Fatalf("daemon.New: %v\n%s", err, logs)
	}
	wait, failed := d.Start(ctx)
	srv := httptest.NewUnstartedServer(d.Handler)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	s := &server{t: t, dir: dir, cfg: cfg, store: st, base: srv.URL, client: srv.Client(), logs: logs}
	s.client.Timeout = 3 * time.Minute
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			srv.Close() // waits for the requests in flight
			cancel()
			if err := wait(); err != nil {
				t.Errorf("a daemon service failed: %v", err)
			}
			d.Close()
		})
	}
	t.Cleanup(s.stop)
	// The index loads in the background; tests start once it is loaded.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs.String(), `"msg":"index loaded"`) {
		select {
		case <-failed.Done():
			t.Fatalf("a daemon service failed before the index loaded: %v\n%s", wait(), logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the index did not load within a minute\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// user creates a user (flags as threatd user add takes them: --name,
// --tier, --role) and returns a fresh token for it.
func (s *server) user(email string, flags ...string) string {
	s.t.Helper()
	n := core.NewUser{Email: email}
	for i := 0; i+1 < len(flags); i += 2 {
		switch flags[i] {
		case "--name":
			n.Name = flags[i+1]
		case "--tier":
			n.Tier = core.Tier(flags[i+1])
		case "--role":
			n.Role = core.Role(flags[i+1])
		default:
			s.t.Fatalf("user: unknown flag %s", flags[i])
		}
	}
	acc := core.NewAccounts(s.store)
	if _, err := acc.AddUser(context.Background(), n); err != nil {
		s.t.Fatalf("adding %s: %v", email, err)
	}
	return s.token(email)
}

// token issues another token for a user.
func (s *server) token(email string) string {
	s.t.Helper()
	secret, _, err := core.NewAccounts(s.store).IssueToken(context.Background(), email, "")
	if err != nil {
		s.t.Fatalf("a token for %s: %v", email, err)
	}
	return secret
}

// review decides on reports as threatd review does: as the system reviewer,
// or as the reviewer whose e-mail is as. version 0 is version 1 for a
// verification or a rejection (threatd review's --version default).
func (s *server) review(d core.Decision, version int, note, as string, ids ...string) {
	s.t.Helper()
	var actor *core.User
	if as != "" {
		u, err := s.store.UserByEmail(context.Background(), as)
		if err != nil {
			s.t.Fatal(err)
		}
		actor = &u
	}
	if version == 0 && d != core.DecisionKeep {
		version = 1
	}
	r := core.NewReports(s.store, core.Limits{})
	for _, id := range ids {
		if _, err := r.Decide(context.Background(), id, version, d, note, actor); err != nil {
			s.t.Fatalf("review %s %s: %v", d, id, err)
		}
	}
}

// verify publishes pending reports at their first version.
func (s *server) verify(ids ...string) {
	s.t.Helper()
	s.review(core.DecisionVerify, 1, "", "", ids...)
}

type response struct {
	code int
	hdr  http.Header
	body map[string]any
	raw  string
}

// do sends one request; token may be empty (apitest.Do: the exchange is
// checked against the OpenAPI document).
func (s *server) do(method, path, token, body string, headers ...string) response {
	s.t.Helper()
	r := apitest.Do(s.t, s.client, s.base, method, path, token, body, headers...)
	return response{code: r.Code, hdr: r.Header, body: r.Body, raw: r.Raw}
}

func (r response) expect(t *testing.T, code int, errText string) response {
	t.Helper()
	apitest.Response{Code: r.code, Header: r.hdr, Body: r.body, Raw: r.raw}.Expect(t, code, errText)
	return r
}

// submit submits a report and returns its id.
func (s *server) submit(token, body string) string {
	s.t.Helper()
	return s.do("POST", base+"/submit-threat-report", token, body).expect(s.t, 201, "").body["threat_id"].(string)
}

// eventually retries check until it holds or eventuallyWithin passed.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	apitest.Eventually(t, what, eventuallyWithin, check)
}

func checkPath(params ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		v.Set(params[i], params[i+1])
	}
	return base + "/check-malicious?" + v.Encode()
}

// logBuffer is the daemon's log, written by its goroutines and read by the
// test.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// feedPage reads one page of /threat-feed, which must answer 200.
func feedPage(t *testing.T, d *server, token, query string) response {
	t.Helper()
	return d.do("GET", base+"/threat-feed?"+query, token, "").expect(t, 200, "")
}

// pkg is the body of an npm package report.
func pkg(name string) string {
	return fmt.Sprintf(`{"report_type":"package","resource_identifier":%q,"registry":"npm","threat_description":"Steals tokens"}`, name)
}

// until sends the request until it answers code (within eventuallyWithin).
func (s *server) until(code int, method, path, token, body string) response {
	s.t.Helper()
	var r response
	eventually(s.t, fmt.Sprintf("%s %s answering %d", method, path, code), func() bool {
		r = s.do(method, path, token, body)
		return r.code == code
	})
	return r
}

// db opens the daemon's SQLite file read-only, for what the API does not
// show (what was stored).
func (s *server) db() *sql.DB {
	s.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.cfg.DataDir, "threatd.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { db.Close() })
	return db
}

// count is the one number query answers.
func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fwGet sends a GET to the firewall with the token (apitest.Get).
func (s *server) fwGet(path, token string, header ...string) (int, http.Header, []byte) {
	s.t.Helper()
	return apitest.Get(s.t, s.client, s.base, path, token, header...)
}

// fwReport submits a package report and verifies it; returns its id.
func (s *server) fwReport(tok, registry, name, versions string) string {
	s.t.Helper()
	id := s.submit(tok, fmt.Sprintf(`{"report_type":"package","resource_identifier":%q,"registry":%q,"threat_description":"Steals credentials at install time","severity_level":"critical","version_info":%q}`,
		name, registry, versions))
	s.verify(id)
	return id
}
