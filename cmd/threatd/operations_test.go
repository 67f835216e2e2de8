package main_test

import (
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

var metricsListening = regexp.MustCompile(`"msg":"metrics listening","address":"([^"]+)"`)

// scrape reads the daemon's /metrics (metrics.listen) with Prometheus' own
// text parser.
func (d *daemon) scrape() map[string]*dto.MetricFamily {
	d.t.Helper()
	m := metricsListening.FindStringSubmatch(d.logText())
	if m == nil {
		d.t.Fatalf("no metrics listener in the log:\n%s", d.logText())
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		b, _ := io.ReadAll(resp.Body)
		d.t.Fatalf("/metrics: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		d.t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	return fams
}

// value is the value of the series of family name whose labels include
// want (a counter, gauge or a histogram's count); -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	total, found := 0.0, false
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	if !found {
		return -1
	}
	return total
}

// TestMetricsAndProbes: /metrics on metrics.listen counts requests by route
// and status, reports the index, the change feed's lag, scheduled imports
// and plugin restarts, with the Go and process collectors; /livez and
// /readyz answer beside /healthz.
func TestMetricsAndProbes(t *testing.T) {
	t.Parallel()
	sampleDir := testbin.OSVSample(t)
	// No rate limits: /readyz is polled every 20 ms, at start and after a
	// restart, and probes share the per-IP budget (300 a minute).
	in := newInstance(t, quiet+fmt.Sprintf("sources:\n  - {name: osv-sample, plugin: osv, paths: [%q], interval: 1h}\n", sampleDir))
	tok := in.user("ops@example.com")
	d := in.serve()

	d.do("GET", "/livez", "", "").expect(t, 200, "")
	var ready response
	eventually(t, "ready", func() bool { ready = d.do("GET", "/readyz", "", ""); return ready.code == 200 })
	checks, _ := ready.body["checks"].(map[string]any)
	if ready.body["status"] != "ready" || checks["storage"] != "ok" || checks["index"] != "loaded" ||
		checks["exporter:stix"] != "ready" || checks["exporter:anomali"] != "ready" || checks["exporter:osv"] != "ready" {
		t.Fatalf("readyz: %s", ready.raw)
	}

	// The source's run at start: every sample record counted by result.
	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(60 * time.Second)
	for {
		fams = d.scrape()
		if value(fams, "threatd_import_runs_total", map[string]string{"source": "osv-sample", "outcome": "ok"}) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source's run was not counted within 60 s\n%s", d.logText())
		}
		time.Sleep(200 * time.Millisecond)
	}
	files := countFiles(t, sampleDir, ".json")
	if got := value(fams, "threatd_import_records_total", map[string]string{"source": "osv-sample"}); got != float64(files) {
		t.Fatalf("import counters add up to %v, want %d records", got, files)
	}
	imported := value(fams, "threatd_import_records_total", map[string]string{"source": "osv-sample", "result": "imported"})
	if imported < 250 {
		t.Fatalf("imported %v of %d", imported, files)
	}
	// The follower applies a page of changes to the index, then moves its
	// position past them: both, before the counters are read below.
	eventually(t, "index holds the import, its feed position past it", func() bool {
		f := d.scrape()
		return value(f, "threatd_index_verified_reports", nil) == imported && value(f, "threatd_change_feed_seq", nil) >= imported
	})

	check := checkPath("report_type", "package", "resource_identifier", "not-malicious-pkg", "ecosystem", "npm")
	for range 3 {
		d.do("GET", check, tok, "").expect(t, 200, "")
	}
	d.do("GET", check, "", "").expect(t, 401, "")
	d.do("GET", "/no/such/path?token=secret", "", "").expect(t, 404, "")

	fams = d.scrape()
	route := base + "/check-malicious"
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"threatd_http_requests_total", map[string]string{"method": "GET", "route": route, "code": "200"}, 3},
		{"threatd_http_requests_total", map[string]string{"method": "GET", "route": route, "code": "401"}, 1},
		{"threatd_http_request_duration_seconds", map[string]string{"method": "GET", "route": route, "code": "200"}, 3},
		{"threatd_http_requests_total", map[string]string{"route": "unmatched", "code": "404"}, 1},
		{"threatd_index_loaded", nil, 1},
		{"threatd_plugin_restarts_total", nil, -1}, // none yet
	} {
		if got := value(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if lag := value(fams, "threatd_change_feed_lag_seconds", nil); lag < 0 || lag > 5 {
		t.Errorf("change feed lag %v s", lag)
	}
	if seq := value(fams, "threatd_change_feed_seq", nil); seq < imported {
		t.Errorf("change feed position %v, below the %v reports imported", seq, imported)
	}
	// The table holds at least a 64-byte record and 8-byte slot per report.
	if got := value(fams, "threatd_index_table_bytes", nil); got < 72*imported {
		t.Errorf("threatd_index_table_bytes = %v for %v reports", got, imported)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_open_fds", "threatd_build_info"} {
		if value(fams, name, nil) <= 0 {
			t.Errorf("%s missing or zero", name)
		}
	}
	// A query string (a token) never becomes a label.
	for name, f := range fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if strings.Contains(l.GetValue(), "secret") || strings.Contains(l.GetValue(), "/no/such") {
					t.Errorf("%s has a label from the request: %s=%s", name, l.GetName(), l.GetValue())
				}
			}
		}
	}

	// A storage plugin killed under the daemon is restarted and counted.
	pid := pluginPID(t, d.logText())
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually10 := time.Now().Add(10 * time.Second)
	for value(d.scrape(), "threatd_plugin_restarts_total", map[string]string{"kind": "storage", "name": "sqlite"}) != 1 {
		if time.Now().After(eventually10) {
			t.Fatalf("storage restart not counted within 10 s\n%s", d.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	eventually(t, "ready again", func() bool { return d.do("GET", "/readyz", "", "").code == 200 })
}

// TestReadyzNamesWhatIsMissing: a configured exporter that cannot start
// keeps /readyz at 503 naming it (the daemon still serves, and /livez is
// 200); metrics.listen "" serves no metrics; a metrics port that is taken
// stops the start with a message naming the key.
func TestReadyzNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "exporters: [stix, missing]\n")
	in.env = []string{"THREATD_METRICS__LISTEN="}
	d := in.serve()
	d.do("GET", "/livez", "", "").expect(t, 200, "")
	var r response
	eventually(t, "exporter marked unavailable", func() bool {
		r = d.do("GET", "/readyz", "", "")
		checks, _ := r.body["checks"].(map[string]any)
		return checks["exporter:missing"] == "unavailable" && checks["exporter:stix"] == "ready"
	})
	checks := r.body["checks"].(map[string]any)
	if r.code != 503 || r.body["status"] != "not ready" || checks["exporter:stix"] != "ready" || checks["storage"] != "ok" || checks["index"] != "loaded" {
		t.Fatalf("readyz with a missing exporter: %d %s", r.code, r.raw)
	}
	if strings.Contains(d.logText(), `"msg":"metrics listening"`) {
		t.Fatal(`metrics served although metrics.listen is ""`)
	}

	// Another daemon whose metrics port is taken (by nothing else than a
	// listener of ours) does not start.
	taken := newInstance(t, "")
	ln := listenTCP(t)
	taken.env = []string{"THREATD_METRICS__LISTEN=" + ln}
	res := taken.cli("serve", "--listen", "127.0.0.1:0")
	if res.code == 0 || !strings.Contains(res.stderr, "metrics.listen: listen tcp "+ln) {
		t.Fatalf("serve with a taken metrics port: %+v", res)
	}
	in.env = []string{"THREATD_METRICS__LISTEN=nope"}
	if res := in.cli("migrate"); res.code == 0 || !strings.Contains(res.stderr, `metrics.listen: must be host:port, or "" to turn metrics off (got "nope")`) {
		t.Fatalf("bad metrics.listen: %+v", res)
	}
}

// countFiles counts the files under dir whose names end in ext.
func countFiles(t *testing.T, dir, ext string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(path, ext) {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// listenTCP holds a port on 127.0.0.1 for the test and returns its address.
func listenTCP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}
