package api

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"
)

// The access log keeps one line per request by default; log.access_sample
// keeps one of N successful requests but every failed one; log.access: off
// keeps only server errors; a level below the logger's writes nothing.
func TestAccessLogSettings(t *testing.T) {
	run := func(cfg AccessLog, loggerLevel slog.Level) (ok, notFound, failed int) {
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: loggerLevel}))
		e := echo.New()
		e.Pre(requestLog(log, cfg, nil))
		e.GET("/ok", func(c *echo.Context) error { return c.String(http.StatusOK, "ok") })
		e.GET("/fail", func(c *echo.Context) error { return errors.New("boom") })
		for _, path := range []string{"/ok", "/ok", "/ok", "/ok", "/ok", "/ok", "/missing", "/missing", "/fail"} {
			e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
		}
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			switch {
			case strings.Contains(l, `"path":"/ok","status":200`):
				ok++
			case strings.Contains(l, `"path":"/missing","status":404`):
				notFound++
			case strings.Contains(l, `"path":"/fail","status":500`) && strings.Contains(l, `"level":"ERROR"`):
				failed++
			}
		}
		return
	}
	for _, c := range []struct {
		name                string
		cfg                 AccessLog
		level               slog.Level
		ok, notFound, faild int
	}{
		{"every request", AccessLog{Level: slog.LevelInfo, Sample: 1}, slog.LevelInfo, 6, 2, 1},
		{"one in three successes", AccessLog{Level: slog.LevelInfo, Sample: 3}, slog.LevelInfo, 2, 2, 1},
		{"off", AccessLog{Off: true, Sample: 1}, slog.LevelInfo, 0, 0, 1},
		{"debug under an info logger", AccessLog{Level: slog.LevelDebug, Sample: 1}, slog.LevelInfo, 0, 0, 1},
	} {
		ok, nf, failed := run(c.cfg, c.level)
		if ok != c.ok || nf != c.notFound || failed != c.faild {
			t.Errorf("%s: %d ok, %d not found, %d failed lines; want %d, %d, %d", c.name, ok, nf, failed, c.ok, c.notFound, c.faild)
		}
	}
}

// BenchmarkRequestMetrics is the per-request cost of the request middleware
// on a trivial route, without and with the Prometheus metrics, the access
// log off (as at tens of thousands of checks a second).
func BenchmarkRequestMetrics(b *testing.B) {
	for _, withMetrics := range []bool{false, true} {
		name := "without-metrics"
		var m *Metrics
		if withMetrics {
			name, m = "with-metrics", NewMetrics("bench")
		}
		b.Run(name, func(b *testing.B) {
			e := echo.New()
			e.Pre(requestLog(slog.New(slog.DiscardHandler), AccessLog{Off: true, Sample: 1}, m))
			e.GET("/functions/v1/check-malicious", func(c *echo.Context) error { return c.String(http.StatusOK, "ok") })
			req := httptest.NewRequest(http.MethodGet, "/functions/v1/check-malicious", nil)
			b.ReportAllocs()
			for b.Loop() {
				e.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
