package daemon_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/cmd/internal/daemon"
	"github.com/threatd/threatd/cmd/internal/sqliteplugin"
	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/api"
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/plugins/plugintest"
)

// BenchmarkCheckPath is the daemon's own cost of a check-malicious
// request, its whole middleware chain and handler, served in process
// without TLS or a network (the rest is the same for any handler: make
// bench-scale measures it), against a trivial echo v5 handler answering
// a constant JSON body in the same run: a miss, and a hit read from the
// index's spill. The ratio trivial/check is what a change to the check
// path moves (docs/performance.md).
func BenchmarkCheckPath(b *testing.B) {
	dir := b.TempDir()
	yaml := fmt.Sprintf("data_dir: %q\nplugins:\n  dir: %q\nexporters: []\nlog: {access_sample: 100}\n%s", filepath.Join(dir, "data"), testbin.PluginDir(b), quiet)
	path := filepath.Join(dir, "threatd.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Load(path, []string{}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		b.Fatal(err)
	}
	st := plugintest.Storage(b, "sqlite", sqliteplugin.Open, plugins.StorageConfig{DataDir: cfg.DataDir, Create: true, Exclusive: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acc := core.NewAccounts(st)
	u, err := acc.AddUser(ctx, core.NewUser{Email: "bench@example.com", Tier: core.TierPaid})
	if err != nil {
		b.Fatal(err)
	}
	token, _, err := acc.IssueToken(ctx, u.Email, "")
	if err != nil {
		b.Fatal(err)
	}
	reports := core.NewReports(st, core.Limits{})
	for i := range 200 {
		typ, name, reg, desc := "package", fmt.Sprintf("bench-pkg-%03d", i), "npm", "Steals tokens at install time"
		th, err := reports.Submit(ctx, core.Principal{User: u}, core.Submission{ReportType: &typ, ResourceIdentifier: &name, Registry: &reg, ThreatDescription: &desc})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := reports.Decide(ctx, th.ID, 1, core.DecisionVerify, "", nil); err != nil {
			b.Fatal(err)
		}
	}
	logs := &logBuffer{}
	d, err := daemon.New(ctx, daemon.Options{Config: cfg, Store: st, Log: slog.New(slog.NewJSONHandler(logs, nil)), Metrics: api.NewMetrics("bench"), Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	wait, _ := d.Start(ctx)
	defer func() { cancel(); _ = wait(); d.Close() }()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), `"msg":"index spill filled"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("the spill was not filled within a minute\n%s", logs)
		}
	}

	trivial := echo.New()
	body := map[string]any{"is_malicious": false, "threat_count": 0, "details": nil}
	trivial.GET("/trivial", func(c *echo.Context) error { return c.JSON(http.StatusOK, body) })
	run := func(b *testing.B, h http.Handler, target string, want string) {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.RemoteAddr = "127.0.0.1:40000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			b.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
		}
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	b.Run("trivial", func(b *testing.B) { run(b, trivial, "/trivial", `"is_malicious":false`) })
	b.Run("miss", func(b *testing.B) {
		run(b, d.Handler, base+"/check-malicious?report_type=package&resource_identifier=clean-pkg-123&ecosystem=npm", `"malicious":false`)
	})
	b.Run("hit", func(b *testing.B) {
		run(b, d.Handler, base+"/check-malicious?report_type=package&resource_identifier=bench-pkg-042&ecosystem=npm", `"malicious":true`)
	})
}
