package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/threatd/threatd/core/analysis"
)

var testFlagKeys = map[string]string{"listen": "server.listen", "data-dir": "data_dir"}

func flags(args ...string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("listen", "", "")
	fs.String("data-dir", "", "")
	fs.String("email", "", "") // not a config flag: ignored
	if err := fs.Parse(args); err != nil {
		panic(err)
	}
	return fs
}

func writeYAML(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "threatd.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	c, err := Load("", []string{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Listen != "127.0.0.1:8443" || c.Server.BasePath != "/functions/v1" || c.Server.TLS.Mode != "self-signed" ||
		c.Server.MaxBodyBytes != 262144 || c.DataDir != "./data" || c.Plugins.Dir != DefaultPluginsDir() ||
		c.Storage.Plugin != "sqlite" || c.Cache.Freshness != time.Second || c.Cache.Records != 10000 ||
		c.Limits.SubmissionsPerHour != 10 || c.Limits.NewUserMaxUnverified != 3 || c.Limits.NewUserVerifiedToLift != 3 ||
		c.Limits.PerIPPerMinute != 300 || c.Limits.PerTokenPerMinute.Free != 60 || c.Limits.PerTokenPerMinute.Paid != 600 ||
		c.Limits.LatestCount != 100 || c.Limits.FeedMaxWindow != 168*time.Hour || c.Limits.FeedPageMax != 1000 ||
		c.Limits.BatchMax != 1000 || c.Limits.Store != "memory" || c.Limits.SyncInterval != 250*time.Millisecond ||
		strings.Join(c.Exporters, ",") != "stix,anomali,osv,misp" || len(c.Server.TrustedProxies) != 0 {
		t.Fatalf("defaults differ from docs/configuration.md: %+v", c)
	}
}

// firewall.cache takes a number of bytes or a size with a unit; the
// firewall's defaults are those of docs/configuration.md.
func TestFirewallKeys(t *testing.T) {
	c, err := Load("", []string{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := c.Firewall
	if !f.Enabled || f.Cache != 1<<30 || f.Registries["npm"].Upstream != "https://registry.npmjs.org" || f.Registries["pypi"].Upstream != "https://pypi.org/simple" ||
		f.Registries["go"].Upstream != "https://proxy.golang.org" || len(f.Private) != 0 || f.PerIPPerMinute != 20000 || f.PerTokenPerMinute != 20000 {
		t.Fatalf("firewall defaults: %+v", f)
	}
	for in, want := range map[string]ByteSize{"512MiB": 512 << 20, "2 GB": 2e9, "0": 0, "1048576": 1 << 20, "10KiB": 10240} {
		c, err := Load("", []string{"THREATD_FIREWALL__CACHE=" + in}, nil, nil)
		if err != nil || c.Firewall.Cache != want {
			t.Errorf("firewall.cache %q: %d %v, want %d", in, c.Firewall.Cache, err, want)
		}
	}
	c, err = Load(writeYAML(t, "firewall: {cache: 1073741824, private: {npm: [\"@acme/*\"]}}"), []string{}, nil, nil)
	if err != nil || c.Firewall.Cache != 1<<30 || c.Firewall.Private["npm"][0] != "@acme/*" {
		t.Fatalf("YAML: %+v %v", c.Firewall, err)
	}
}

func TestScanKeys(t *testing.T) {
	c, err := Load("", []string{}, nil, nil)
	if err != nil || c.Scan.MaxBytes != 8<<20 {
		t.Fatalf("scan.max_bytes default: %d %v", c.Scan.MaxBytes, err)
	}
	c, err = Load("", []string{"THREATD_SCAN__MAX_BYTES=16MiB"}, nil, nil)
	if err != nil || c.Scan.MaxBytes != 16<<20 {
		t.Fatalf("scan.max_bytes 16MiB: %d %v", c.Scan.MaxBytes, err)
	}
	if _, err := Load("", []string{"THREATD_SCAN__MAX_BYTES=10"}, nil, nil); err == nil || !strings.Contains(err.Error(), "scan.max_bytes") {
		t.Fatalf("scan.max_bytes 10: %v", err)
	}
}

// TestEveryTopLevelKeyFromTheEnvironment: each top-level key of the
// configuration can be set by a THREATD_ variable (community, blocklists
// and siem were ignored).
func TestEveryTopLevelKeyFromTheEnvironment(t *testing.T) {
	c, err := Load("", []string{"THREATD_SIEM__SYSLOG__ADDRESS=tcp://127.0.0.1:6514", "THREATD_COMMUNITY__DISPUTE_VOTES=5",
		"THREATD_BLOCKLISTS__RPZ_ZONE=rpz.example.", "THREATD_ANALYSIS__REPORT_SEVERITY=critical"}, nil, nil)
	if err != nil || c.SIEM.Syslog.Address != "tcp://127.0.0.1:6514" || c.Community.DisputeVotes != 5 || c.Blocklists.RPZZone != "rpz.example." ||
		c.Analysis.ReportSeverity != "critical" {
		t.Fatalf("%+v %+v %+v %v", c.SIEM, c.Community, c.Blocklists, err)
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Config]()) {
		if key := f.Tag.Get("koanf"); key != "" && !topLevelKeys[key] {
			t.Errorf("top-level key %s cannot be set from the environment (topLevelKeys)", key)
		}
	}
}

func TestAnalysisKeys(t *testing.T) {
	c, err := Load("", []string{}, nil, nil)
	if err != nil || len(c.Analysis.Analyzers) != 1 || c.Analysis.Analyzers[0] != "rules" || c.Analysis.ReportSeverity != "high" ||
		c.AnalysisLimits() != analysis.DefaultLimits || c.Analysis.Timeout != time.Minute {
		t.Fatalf("analysis defaults: %+v %v", c.Analysis, err)
	}
	c, err = Load(writeYAML(t, "analysis: {rules_dir: /etc/threatd/rules, report_severity: critical, max_files: 10}"), []string{"THREATD_ANALYSIS__MAX_FILE_BYTES=1MiB"}, nil, nil)
	if err != nil || c.Analysis.RulesDir != "/etc/threatd/rules" || c.Analysis.ReportSeverity != "critical" || c.AnalysisLimits().MaxFiles != 10 || c.AnalysisLimits().MaxFileBytes != 1<<20 {
		t.Fatalf("analysis set: %+v %v", c.Analysis, err)
	}
	for env, key := range map[string]string{
		"THREATD_ANALYSIS__REPORT_SEVERITY=severe": "analysis.report_severity",
		"THREATD_ANALYSIS__MAX_FILES=0":            "analysis.max_files",
		"THREATD_ANALYSIS__TIMEOUT=10ms":           "analysis.timeout",
		"THREATD_ANALYSIS__MAX_ARCHIVE_BYTES=10":   "analysis.max_archive_bytes",
	} {
		if _, err := Load("", []string{env}, nil, nil); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v", env, err)
		}
	}
	if _, err := Load(writeYAML(t, "analysis: {analyzers: [\"../x\"]}"), []string{}, nil, nil); err == nil || !strings.Contains(err.Error(), "analysis.analyzers[0]") {
		t.Errorf("a bad analyzer name: %v", err)
	}
}

func TestOrderDefaultsFileEnvFlags(t *testing.T) {
	path := writeYAML(t, `
server:
  listen: "127.0.0.1:1111"
  trusted_proxies: ["10.0.0.0/8"]
data_dir: /from/file
limits:
  per_token_per_minute: {free: 5}
  feed_max_window: 24h
exporter_routes:
  - {path: /export/csv, exporter: csv, tier: paid}
`)
	c, err := Load(path, nil, flags(), testFlagKeys)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Listen != "127.0.0.1:1111" || c.DataDir != "/from/file" || c.Limits.PerTokenPerMinute.Free != 5 ||
		c.Limits.PerTokenPerMinute.Paid != 600 || c.Limits.FeedMaxWindow != 24*time.Hour ||
		len(c.ExporterRoutes) != 1 || c.ExporterRoutes[0].Exporter != "csv" || c.Server.TrustedProxies[0] != "10.0.0.0/8" {
		t.Fatalf("file values not applied: %+v", c)
	}

	environ := []string{
		"THREATD_SERVER__LISTEN=127.0.0.1:2222",
		"THREATD_LIMITS__PER_TOKEN_PER_MINUTE__FREE=7",
		"THREATD_DATA_DIR=/from/env",
		"THREATD_EXPORTERS=stix,csv",
		"THREATD_TEST_POSTGRES=off", // not configuration: ignored
		"OTHER=1",
	}
	c, err = Load(path, environ, flags(), testFlagKeys)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Listen != "127.0.0.1:2222" || c.Limits.PerTokenPerMinute.Free != 7 || c.DataDir != "/from/env" ||
		strings.Join(c.Exporters, ",") != "stix,csv" {
		t.Fatalf("environment does not override the file: %+v", c)
	}

	c, err = Load(path, environ, flags("--listen", "127.0.0.1:3333", "--email", "x@y.z"), testFlagKeys)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Listen != "127.0.0.1:3333" || c.DataDir != "/from/env" {
		t.Fatalf("flags do not override the environment (or unset flags did): %+v", c)
	}
}

func TestInvalidNamesTheKey(t *testing.T) {
	cases := []struct {
		yaml, env, key string
	}{
		{yaml: "server: {listen: nonsense}", key: "server.listen"},
		{yaml: "server: {tls: {mode: sometimes}}", key: "server.tls.mode"},
		{yaml: "server: {tls: {mode: files}}", key: "server.tls.cert_file"},
		{yaml: "server: {trusted_proxies: [not-a-cidr]}", key: "server.trusted_proxies[0]"},
		{yaml: "server: {max_body_bytes: 10}", key: "server.max_body_bytes"},
		{yaml: "storage: {plugin: '../evil'}", key: "storage.plugin"},
		{yaml: "limits: {per_ip_per_minute: -1}", key: "limits.per_ip_per_minute"},
		{yaml: "limits: {store: redis}", key: "limits.store"},
		{yaml: "cache: {freshness: 0s}", key: "cache.freshness"},
		{yaml: "blocklists: {rpz_zone: rpz.threatd}", key: "blocklists.rpz_zone"},
		{yaml: "blocklists: {rpz_zone: \"bad zone.\"}", key: "blocklists.rpz_zone"},
		{yaml: "blocklists: {suricata_sid_base: 0}", key: "blocklists.suricata_sid_base"},
		{yaml: "sources: [{name: u, plugin: urlhaus, interval: 1h, trust: maybe}]", key: "sources[0].trust"},
		{yaml: "blocklists: {suricata_sid_base: 4294967295}", key: "blocklists.suricata_sid_base"},
		{yaml: "cache: {records: 3}", key: "cache.records"},
		{yaml: "limits: {feed_max_window: soon}", key: "feed_max_window"},
		{yaml: "limtis: {store: memory}", key: "limtis"},
		{yaml: "server: {lisen: x}", key: "lisen"},
		{yaml: "log: {access: verbose}", key: "log.access"},
		{yaml: "log: {access_sample: 0}", key: "log.access_sample"},
		{yaml: "metrics: {listen: nope}", key: "metrics.listen"},
		{yaml: "metrics: {listen: \"127.0.0.1:8443\"}", key: "metrics.listen"},
		{env: "THREATD_WEB__SIGNUP=sometimes", key: "web.signup"},
		{env: "THREATD_METRICS__LISTEN=9464", key: "metrics.listen"},
		{env: "THREATD_LIMITS__BATCH_MAX=lots", key: "batch_max"},
		{env: "THREATD_SERVER__BASE_PATH=functions/v1", key: "server.base_path"},
		{yaml: "firewall: {npm: {upstream: registry.npmjs.org}}", key: "firewall.npm.upstream"},
		{yaml: "firewall: {private: {cpan: [\"x\"]}}", key: "firewall.private.cpan"},
		{yaml: "firewall: {private: {npm: [\" \"]}}", key: "firewall.private.npm[0]"},
		{yaml: "firewall: {rules: {typosquat: block}}", key: "firewall.rules.typosquat"},
		{yaml: "firewall: {rules: {quarantine: deny}}", key: "firewall.rules.quarantine"},
		{yaml: "firewall: {quarantine: {ecosystems: {cpan: 1h}}}", key: "firewall.quarantine.ecosystems"},
		{yaml: "firewall: {quarantine: {missing_time: maybe}}", key: "firewall.quarantine.missing_time"},
		{yaml: "firewall: {quarantine: {default: -1h}}", key: "firewall.quarantine.default"},
		{yaml: "firewall: {quarantine: {packages: [{ecosystem: npm, duration: 1h}]}}", key: "firewall.quarantine.packages[0].name"},
		{yaml: "firewall: {decisions_keep: 1m}", key: "firewall.decisions_keep"},
		{yaml: "firewall: {cache: lots}", key: "firewall.cache"},
		{yaml: "firewall: {per_token_per_minute: -1}", key: "firewall.per_token_per_minute"},
		{yaml: "firewall: {reviewer_waiver_max: 9000h}", key: "firewall.reviewer_waiver_max"},
		{yaml: "server: {tls: {names: [threatd.example, \"https://threatd.example\"]}}", key: "server.tls.names[1]"},
		{yaml: "server: {tls: {names: [\"threatd.example:8443\"]}}", key: "server.tls.names[0]"},
	}
	for _, c := range cases {
		path := ""
		if c.yaml != "" {
			path = writeYAML(t, c.yaml)
		}
		var environ []string
		if c.env != "" {
			environ = []string{c.env}
		} else {
			environ = []string{}
		}
		_, err := Load(path, environ, nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%q %q: error %v does not name %s", c.yaml, c.env, err, c.key)
		}
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), []string{}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("got %v", err)
	}
}

// TestCertName: the names a certificate can cover (server.tls.names, and
// the machine's host name, which serve adds only when it is one).
func TestCertName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"threatd.example": true, "*.internal.example": true, "Build-Host": true, "192.0.2.7": true, "::1": true,
		"": false, "my host": false, "a..b": false, "-lead.example": false, "x.example:8443": false, "https://x.example": false,
		strings.Repeat("a", 64) + ".example": false,
	} {
		if got := CertName(name); got != want {
			t.Errorf("CertName(%q) = %v, want %v", name, got, want)
		}
	}
}

// Plugins keep their files under data_dir when it exists, nowhere when
// it does not.
func TestPluginCacheDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if got := (Config{DataDir: dir}).PluginCacheDir(); got != filepath.Join(dir, "plugin-cache") {
		t.Fatalf("data_dir %s: %q", dir, got)
	}
	if got := (Config{DataDir: filepath.Join(dir, "missing")}).PluginCacheDir(); got != "" {
		t.Fatalf("a missing data_dir: %q", got)
	}
	if got := (Config{}).PluginCacheDir(); got != "" {
		t.Fatalf("no data_dir: %q", got)
	}
}
