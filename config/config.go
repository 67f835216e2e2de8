// Package config loads threatd's configuration with koanf in a fixed order —
// built-in defaults, a YAML file, THREATD_ environment variables (with "__"
// for nesting), command-line flags; later wins — and validates it, naming the
// bad key. There is no global configuration: Load returns a value that is
// passed to what needs it.
package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// Config is the whole configuration of a threatd daemon (docs/configuration.md).
type Config struct {
	Server         Server          `koanf:"server"`
	DataDir        string          `koanf:"data_dir"`
	Plugins        Plugins         `koanf:"plugins"`
	Storage        Storage         `koanf:"storage"`
	Exporters      []string        `koanf:"exporters"`
	ExporterRoutes []ExporterRoute `koanf:"exporter_routes"`
	Sources        []Source        `koanf:"sources"`
	Import         Import          `koanf:"import"`
	Cache          Cache           `koanf:"cache"`
	Limits         Limits          `koanf:"limits"`
	Log            Log             `koanf:"log"`
	Web            Web             `koanf:"web"`
	Metrics        Metrics         `koanf:"metrics"`
	Firewall       Firewall        `koanf:"firewall"`
	Scan           Scan            `koanf:"scan"`
	Webhooks       Webhooks        `koanf:"webhooks"`
}

// Import bounds what one upstream record may become (threatd import and
// scheduled sources; docs/ingestion.md).
type Import struct {
	// MaxAffected is the most affected packages one record may list: each
	// becomes a report, so a larger record is skipped with its reason.
	MaxAffected int `koanf:"max_affected"`
}

// Settings are what a source plugin is told of these bounds.
func (i Import) Settings() map[string]string {
	return map[string]string{"max_affected": strconv.Itoa(i.MaxAffected)}
}

// Metrics is the Prometheus endpoint (docs/operations/metrics.md).
type Metrics struct {
	// Listen is the host:port of /metrics over plain HTTP; "" turns it off.
	Listen string `koanf:"listen"`
}

// Web is the web site (docs/web.md).
type Web struct {
	// Enabled serves the site at / (false: the API alone).
	Enabled bool `koanf:"enabled"`
	// Signup is open (anyone may create an account) or closed (accounts
	// come from the CLI).
	Signup string `koanf:"signup"`
	// SessionTTL is how long a web log-in lasts.
	SessionTTL time.Duration `koanf:"session_ttl"`
	// LoginAttempts and LoginAttemptsPerIP bound log-in attempts per account
	// and per client IP in every LoginWindow (per daemon).
	LoginAttempts      int           `koanf:"login_attempts"`
	LoginAttemptsPerIP int           `koanf:"login_attempts_per_ip"`
	LoginWindow        time.Duration `koanf:"login_window"`
}

// Server is the HTTPS listener.
type Server struct {
	Listen         string   `koanf:"listen"`
	BasePath       string   `koanf:"base_path"`
	TLS            TLS      `koanf:"tls"`
	TrustedProxies []string `koanf:"trusted_proxies"`
	MaxBodyBytes   int64    `koanf:"max_body_bytes"`
}

// TLS selects how the listener gets its certificate.
type TLS struct {
	Mode     string `koanf:"mode"`
	CertFile string `koanf:"cert_file"`
	KeyFile  string `koanf:"key_file"`
}

// TLS modes.
const (
	TLSSelfSigned = "self-signed"
	TLSFiles      = "files"
	TLSOff        = "off"
)

// Plugins locates plugin binaries.
type Plugins struct {
	Dir string `koanf:"dir"`
}

// Storage selects the storage plugin.
type Storage struct {
	Plugin string `koanf:"plugin"`
	DSN    string `koanf:"dsn"`
	// Settings are passed to the plugin as they are (backend-specific).
	Settings map[string]string `koanf:"settings"`
}

// ExporterRoute maps an extra endpoint to a named exporter plugin.
type ExporterRoute struct {
	Path     string `koanf:"path"`
	Exporter string `koanf:"exporter"`
	Tier     string `koanf:"tier"`
	// Select is the records the exporter gets: latest (default), window or
	// all (docs/plugins/exporters.md).
	Select string `koanf:"select"`
}

// Source is a scheduled ingestion source.
type Source struct {
	Name     string        `koanf:"name"`
	Plugin   string        `koanf:"plugin"`
	Paths    []string      `koanf:"paths"`
	Interval time.Duration `koanf:"interval"`
}

// Cache bounds how stale in-memory caches may be across daemons.
type Cache struct {
	Freshness time.Duration `koanf:"freshness"`
	// Records is how many full reports the check path keeps in memory
	// (the index itself always holds every verified report).
	Records int `koanf:"records"`
}

// PerTier is one number per tier.
type PerTier struct {
	Free int `koanf:"free"`
	Paid int `koanf:"paid"`
}

// Limits are the service's quotas and rate limits.
type Limits struct {
	SubmissionsPerHour     int           `koanf:"submissions_per_hour"`
	SubmissionsPerHourPaid int           `koanf:"submissions_per_hour_paid"`
	NewUserMaxUnverified   int           `koanf:"new_user_max_unverified"`
	NewUserVerifiedToLift  int           `koanf:"new_user_verified_to_lift"`
	PerIPPerMinute         int           `koanf:"per_ip_per_minute"`
	PerTokenPerMinute      PerTier       `koanf:"per_token_per_minute"`
	LatestCount            int           `koanf:"latest_count"`
	FeedMaxWindow          time.Duration `koanf:"feed_max_window"`
	FeedPageMax            int           `koanf:"feed_page_max"`
	BatchMax               int           `koanf:"batch_max"`
	Store                  string        `koanf:"store"`
	SyncInterval           time.Duration `koanf:"sync_interval"`
}

// Log configures the daemon's structured log (stderr, JSON).
type Log struct {
	Level string `koanf:"level"`
	// Format is json, text, or auto: text when standard error is a
	// terminal (make run), JSON otherwise (a service's journal, a pipe).
	Format string `koanf:"format"`
	// Access is the level of the one-line-per-request access log: debug,
	// info, warn, or off. Failed requests (5xx) are logged at error whatever
	// it says.
	Access string `koanf:"access"`
	// AccessSample logs one of every N requests that succeed (status < 400);
	// requests that fail are always logged. 1 logs every request.
	AccessSample int `koanf:"access_sample"`
}

// Firewall configures the registry firewall (docs/firewall.md).
type Firewall struct {
	Enabled bool             `koanf:"enabled"`
	NPM     FirewallUpstream `koanf:"npm"`
	PyPI    FirewallUpstream `koanf:"pypi"`
	Go      FirewallUpstream `koanf:"go"`
	// Private holds name globs per registry (npm, pypi, go) that reports
	// never block: internal packages.
	Private map[string][]string `koanf:"private"`
	// Cache bounds the upstream documents and files kept on disk under
	// data_dir/firewall-cache (0: none kept).
	Cache ByteSize `koanf:"cache"`
	// The firewall's own request budgets (0 = unlimited): one install makes
	// hundreds of requests.
	PerIPPerMinute    int `koanf:"per_ip_per_minute"`
	PerTokenPerMinute int `koanf:"per_token_per_minute"`
}

// Scan configures the CI gate, POST /scan (docs/ci.md).
type Scan struct {
	// MaxBytes bounds the lockfile or SBOM one request may send.
	MaxBytes ByteSize `koanf:"max_bytes"`
}

// Webhooks configures push subscriptions (docs/webhooks.md).
type Webhooks struct {
	// AllowPrivate lets targets be private, loopback or link-local
	// addresses (checked when a subscription is added and at connect time).
	AllowPrivate bool `koanf:"allow_private"`
	// Timeout bounds one delivery attempt.
	Timeout time.Duration `koanf:"timeout"`
	// A failed delivery is tried again after RetryBase, doubling up to
	// RetryMax (with jitter), for RetryWindow after its event; a
	// subscription failing for RetryWindow is disabled.
	RetryBase   time.Duration `koanf:"retry_base"`
	RetryMax    time.Duration `koanf:"retry_max"`
	RetryWindow time.Duration `koanf:"retry_window"`
	// MaxPending bounds a disabled subscription's queue: older events
	// expire (counted).
	MaxPending int `koanf:"max_pending"`
	// KeepFinished is how long delivered, failed and expired events stay
	// listed by `threatd webhook deliveries`.
	KeepFinished time.Duration `koanf:"keep_finished"`
	// Poll is how often the delivering daemon reads the queue for events
	// published by other daemons and for due retries.
	Poll        time.Duration `koanf:"poll"`
	Concurrency int           `koanf:"concurrency"`
}

// FirewallUpstream is one registry's upstream.
type FirewallUpstream struct {
	Upstream string `koanf:"upstream"`
}

// ByteSize is a number of bytes, written as a number or with a unit
// (KiB, MiB, GiB, TiB, or KB, MB, GB, TB): 1073741824, "1GiB", "512MiB".
type ByteSize int64

// UnmarshalText parses a size with an optional unit.
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return fmt.Errorf("%q is not a size in bytes (a number, or a number with KiB, MiB, GiB, TiB, KB, MB, GB or TB)", string(text))
	}
	*b = ByteSize(n * mult)
	return nil
}

// Defaults are the built-in values of docs/configuration.md.
func Defaults() map[string]any {
	return map[string]any{
		"server.listen":                    "127.0.0.1:8443",
		"server.base_path":                 "/functions/v1",
		"server.tls.mode":                  TLSSelfSigned,
		"server.tls.cert_file":             "",
		"server.tls.key_file":              "",
		"server.trusted_proxies":           []string{},
		"server.max_body_bytes":            262144,
		"data_dir":                         "./data",
		"plugins.dir":                      "", // beside the executable: DefaultPluginsDir
		"storage.plugin":                   "sqlite",
		"storage.dsn":                      "",
		"storage.settings":                 map[string]any{},
		"exporters":                        []string{"stix", "anomali", "osv"},
		"exporter_routes":                  []any{},
		"sources":                          []any{},
		"import.max_affected":              1000,
		"cache.freshness":                  "1s",
		"cache.records":                    10000,
		"limits.submissions_per_hour":      10,
		"limits.submissions_per_hour_paid": 0,
		"limits.new_user_max_unverified":   3,
		"limits.new_user_verified_to_lift": 3,
		"limits.per_ip_per_minute":         300,
		"limits.per_token_per_minute.free": 60,
		"limits.per_token_per_minute.paid": 600,
		"limits.latest_count":              100,
		"limits.feed_max_window":           "168h",
		"limits.feed_page_max":             1000,
		"limits.batch_max":                 1000,
		"limits.store":                     "memory",
		"limits.sync_interval":             "250ms",
		"log.level":                        "info",
		"log.format":                       "auto",
		"log.access":                       "info",
		"log.access_sample":                1,
		"metrics.listen":                   "127.0.0.1:9464",
		"web.enabled":                      true,
		"web.signup":                       "open",
		"web.session_ttl":                  "168h",
		"web.login_attempts":               10,
		"web.login_attempts_per_ip":        50,
		"web.login_window":                 "15m",
		"firewall.enabled":                 true,
		"firewall.npm.upstream":            "https://registry.npmjs.org",
		"firewall.pypi.upstream":           "https://pypi.org/simple",
		"firewall.go.upstream":             "https://proxy.golang.org",
		"firewall.private":                 map[string]any{},
		"firewall.cache":                   "1GiB",
		"firewall.per_ip_per_minute":       20000,
		"firewall.per_token_per_minute":    20000,
		"scan.max_bytes":                   "8MiB",
		"webhooks.allow_private":           false,
		"webhooks.timeout":                 "10s",
		"webhooks.retry_base":              "10s",
		"webhooks.retry_max":               "1h",
		"webhooks.retry_window":            "24h",
		"webhooks.max_pending":             100000,
		"webhooks.keep_finished":           "168h",
		"webhooks.poll":                    "1s",
		"webhooks.concurrency":             8,
	}
}

// EnvPrefix is the prefix of configuration environment variables.
const EnvPrefix = "THREATD_"

// topLevelKeys are the first segments of valid keys; other THREATD_*
// variables (e.g. THREATD_TEST_*) are not configuration and are ignored.
var topLevelKeys = map[string]bool{
	"server": true, "data_dir": true, "plugins": true, "storage": true, "exporters": true,
	"exporter_routes": true, "sources": true, "import": true, "cache": true, "limits": true, "log": true, "web": true, "metrics": true, "firewall": true, "scan": true, "webhooks": true,
}

// envKey maps THREATD_SERVER__LISTEN to server.listen; "" for non-config variables.
func envKey(name string) string {
	k := strings.ToLower(strings.TrimPrefix(name, EnvPrefix))
	k = strings.ReplaceAll(k, "__", ".")
	top, _, _ := strings.Cut(k, ".")
	if !topLevelKeys[top] {
		return ""
	}
	return k
}

// Load reads the configuration: defaults, then the YAML file (if path is not
// empty), then the environment, then the flags in fs that carry a config
// key (see FlagKeys). It returns a validated Config.
func Load(path string, environ []string, fs *pflag.FlagSet, flagKeys map[string]string) (Config, error) {
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(Defaults(), "."), nil); err != nil {
		return Config{}, err
	}
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", path, err)
		}
		if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	if environ == nil {
		environ = os.Environ()
	}
	err := k.Load(env.Provider(".", env.Opt{
		Prefix:        EnvPrefix,
		EnvironFunc:   func() []string { return environ },
		TransformFunc: func(name, v string) (string, any) { return envKey(name), v },
	}), nil)
	if err != nil {
		return Config{}, fmt.Errorf("environment: %w", err)
	}
	if fs != nil {
		err := k.Load(posflag.ProviderWithFlag(fs, ".", nil, func(f *pflag.Flag) (string, any) {
			key, ok := flagKeys[f.Name]
			if !ok || !f.Changed {
				return "", nil
			}
			return key, posflag.FlagVal(fs, f)
		}), nil)
		if err != nil {
			return Config{}, fmt.Errorf("flags: %w", err)
		}
	}
	var c Config
	err = k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
			mapstructure.TextUnmarshallerHookFunc(),
		),
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		TagName:          "koanf",
	}})
	if err != nil {
		return Config{}, fmt.Errorf("invalid configuration: %s", describeDecodeError(err))
	}
	if c.Plugins.Dir == "" {
		c.Plugins.Dir = DefaultPluginsDir()
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// DefaultPluginsDir is plugins.dir when the configuration does not set it:
// the plugin directory that belongs to this executable, found from where it
// is (links resolved): <dir>/plugins beside it, as make build lays out a
// checkout (bin/threatd, bin/plugins/), or <prefix>/lib/threatd/plugins
// for <prefix>/bin/threatd, as make install lays it out. When neither
// exists it is the first, and a command that starts a plugin says that the
// plugin is missing there.
func DefaultPluginsDir() string {
	exe, err := os.Executable()
	if err != nil {
		return filepath.Join("bin", "plugins")
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	dir := filepath.Dir(exe)
	beside, installed := filepath.Join(dir, "plugins"), filepath.Join(dir, "..", "lib", "threatd", "plugins")
	for _, d := range []string{beside, installed} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return filepath.Clean(d)
		}
	}
	return beside
}

// describeDecodeError rewrites mapstructure's messages so that each names
// the dotted key: "unknown key: server.lisen", "limits.batch_max: cannot parse …".
func describeDecodeError(err error) string {
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "* "))
		if line == "" || strings.HasPrefix(line, "decoding failed") {
			continue
		}
		if m := invalidKeys.FindStringSubmatch(line); m != nil {
			parent := m[1]
			for _, k := range strings.Split(m[2], ",") {
				k = strings.TrimSpace(k)
				if parent != "config.Config" && parent != "" {
					k = parent + "." + k
				}
				out = append(out, "unknown key: "+k)
			}
			continue
		}
		if m := quotedKey.FindStringSubmatch(line); m != nil {
			line = m[1] + ": " + m[2]
		}
		out = append(out, line)
	}
	return strings.Join(out, "; ")
}

var (
	invalidKeys = regexp.MustCompile(`^'([^']*)' has invalid keys: (.*)$`)
	quotedKey   = regexp.MustCompile(`^'([^']*)' (.*)$`)
)

// KeyError is a configuration error naming the key.
type KeyError struct {
	Key     string
	Message string
}

// Error returns "invalid configuration: key: message".
func (e *KeyError) Error() string {
	return fmt.Sprintf("invalid configuration: %s: %s", e.Key, e.Message)
}

func bad(key, format string, args ...any) error {
	return &KeyError{Key: key, Message: fmt.Sprintf(format, args...)}
}

var (
	pluginName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	routePath  = regexp.MustCompile(`^(/[a-z0-9][a-z0-9_-]*)+$`)
)

// Validate checks every value; the first error names its key.
func (c *Config) Validate() error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if _, _, err := net.SplitHostPort(c.Server.Listen); err != nil {
		add(bad("server.listen", "must be host:port (got %q)", c.Server.Listen))
	}
	if !strings.HasPrefix(c.Server.BasePath, "/") || strings.HasSuffix(c.Server.BasePath, "/") && c.Server.BasePath != "/" || strings.ContainsAny(c.Server.BasePath, " ?#:") {
		add(bad("server.base_path", "must start with / and not end with / (got %q)", c.Server.BasePath))
	}
	switch c.Server.TLS.Mode {
	case TLSSelfSigned, TLSOff:
	case TLSFiles:
		if c.Server.TLS.CertFile == "" {
			add(bad("server.tls.cert_file", "is required when server.tls.mode is files"))
		}
		if c.Server.TLS.KeyFile == "" {
			add(bad("server.tls.key_file", "is required when server.tls.mode is files"))
		}
	default:
		add(bad("server.tls.mode", "must be one of self-signed, files, off (got %q)", c.Server.TLS.Mode))
	}
	for i, p := range c.Server.TrustedProxies {
		if _, err := ParsePrefix(p); err != nil {
			add(bad(fmt.Sprintf("server.trusted_proxies[%d]", i), "%v", err))
		}
	}
	if c.Server.MaxBodyBytes < 1024 || c.Server.MaxBodyBytes > 64<<20 {
		add(bad("server.max_body_bytes", "must be between 1024 and 67108864 (got %d)", c.Server.MaxBodyBytes))
	}
	if c.DataDir == "" {
		add(bad("data_dir", "must not be empty"))
	}
	for key, up := range map[string]string{"firewall.npm.upstream": c.Firewall.NPM.Upstream,
		"firewall.pypi.upstream": c.Firewall.PyPI.Upstream, "firewall.go.upstream": c.Firewall.Go.Upstream} {
		if u, err := url.Parse(up); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			add(bad(key, "must be an http(s) URL such as https://registry.npmjs.org (got %q)", up))
		}
	}
	for reg, globs := range c.Firewall.Private {
		if reg != "npm" && reg != "pypi" && reg != "go" {
			add(bad("firewall.private."+reg, "is not a registry the firewall serves (npm, pypi, go)"))
		}
		for i, g := range globs {
			if strings.TrimSpace(g) == "" {
				add(bad(fmt.Sprintf("firewall.private.%s[%d]", reg, i), "must not be empty"))
			}
		}
	}
	w := c.Webhooks
	if w.Timeout < 100*time.Millisecond || w.Timeout > 5*time.Minute {
		add(bad("webhooks.timeout", "must be between 100ms and 5m (got %s)", w.Timeout))
	}
	if w.RetryBase < 10*time.Millisecond || w.RetryMax < w.RetryBase {
		add(bad("webhooks.retry_base", "must be at least 10ms and at most webhooks.retry_max (got %s and %s)", w.RetryBase, w.RetryMax))
	}
	if w.RetryWindow < time.Second {
		add(bad("webhooks.retry_window", "must be at least 1s (got %s)", w.RetryWindow))
	}
	if w.MaxPending < 1 || w.MaxPending > 100_000_000 {
		add(bad("webhooks.max_pending", "must be from 1 to 100000000 (got %d)", w.MaxPending))
	}
	if w.KeepFinished < time.Minute {
		add(bad("webhooks.keep_finished", "must be at least 1m (got %s)", w.KeepFinished))
	}
	if w.Poll < 10*time.Millisecond || w.Poll > time.Minute {
		add(bad("webhooks.poll", "must be between 10ms and 1m (got %s)", w.Poll))
	}
	if w.Concurrency < 1 || w.Concurrency > 256 {
		add(bad("webhooks.concurrency", "must be from 1 to 256 (got %d)", w.Concurrency))
	}
	if c.Scan.MaxBytes < 1024 || c.Scan.MaxBytes > 1<<30 {
		add(bad("scan.max_bytes", "must be between 1KiB and 1GiB (got %d)", c.Scan.MaxBytes))
	}
	if c.Firewall.Cache < 0 {
		add(bad("firewall.cache", "must not be negative"))
	}
	if c.Firewall.PerIPPerMinute < 0 {
		add(bad("firewall.per_ip_per_minute", "must not be negative (0 = unlimited)"))
	}
	if c.Firewall.PerTokenPerMinute < 0 {
		add(bad("firewall.per_token_per_minute", "must not be negative (0 = unlimited)"))
	}
	if c.Plugins.Dir == "" {
		add(bad("plugins.dir", "must not be empty"))
	}
	if !pluginName.MatchString(c.Storage.Plugin) {
		add(bad("storage.plugin", "must be a plugin name such as sqlite or postgres (got %q)", c.Storage.Plugin))
	}
	for i, e := range c.Exporters {
		if !pluginName.MatchString(e) {
			add(bad(fmt.Sprintf("exporters[%d]", i), "must be a plugin name (got %q)", e))
		}
	}
	for i, r := range c.ExporterRoutes {
		key := fmt.Sprintf("exporter_routes[%d]", i)
		if !routePath.MatchString(r.Path) {
			add(bad(key+".path", "must be a path like /export/csv: lower-case letters, digits, - _ / (got %q)", r.Path))
		}
		if !pluginName.MatchString(r.Exporter) {
			add(bad(key+".exporter", "must be a plugin name (got %q)", r.Exporter))
		}
		if r.Tier != "" && r.Tier != "free" && r.Tier != "paid" {
			add(bad(key+".tier", "must be free or paid (got %q)", r.Tier))
		}
		if r.Select != "" && r.Select != "latest" && r.Select != "window" && r.Select != "all" {
			add(bad(key+".select", "must be latest, window or all (got %q)", r.Select))
		}
	}
	for i, s := range c.Sources {
		key := fmt.Sprintf("sources[%d]", i)
		if s.Name == "" {
			add(bad(key+".name", "must not be empty"))
		}
		if !pluginName.MatchString(s.Plugin) {
			add(bad(key+".plugin", "must be a plugin name (got %q)", s.Plugin))
		}
		if s.Interval < time.Minute {
			add(bad(key+".interval", "must be at least 1m (got %s)", s.Interval))
		}
	}
	if c.Import.MaxAffected < 1 || c.Import.MaxAffected > 100_000 {
		add(bad("import.max_affected", "must be between 1 and 100000 (got %d)", c.Import.MaxAffected))
	}
	if c.Cache.Freshness <= 0 || c.Cache.Freshness > time.Hour {
		add(bad("cache.freshness", "must be between 1ns and 1h (got %s)", c.Cache.Freshness))
	}
	if c.Cache.Records < 16 || c.Cache.Records > 10_000_000 {
		add(bad("cache.records", "must be between 16 and 10000000 (got %d)", c.Cache.Records))
	}
	l := c.Limits
	nonNeg := map[string]int{
		"limits.submissions_per_hour":      l.SubmissionsPerHour,
		"limits.submissions_per_hour_paid": l.SubmissionsPerHourPaid,
		"limits.new_user_max_unverified":   l.NewUserMaxUnverified,
		"limits.new_user_verified_to_lift": l.NewUserVerifiedToLift,
		"limits.per_ip_per_minute":         l.PerIPPerMinute,
		"limits.per_token_per_minute.free": l.PerTokenPerMinute.Free,
		"limits.per_token_per_minute.paid": l.PerTokenPerMinute.Paid,
	}
	for _, key := range slices.Sorted(maps.Keys(nonNeg)) {
		if nonNeg[key] < 0 {
			add(bad(key, "must not be negative (got %d; 0 means no limit)", nonNeg[key]))
		}
	}
	if l.LatestCount < 1 || l.LatestCount > 1000 {
		add(bad("limits.latest_count", "must be between 1 and 1000 (got %d)", l.LatestCount))
	}
	if l.FeedMaxWindow < time.Hour {
		add(bad("limits.feed_max_window", "must be at least 1h (got %s)", l.FeedMaxWindow))
	}
	if l.FeedPageMax < 1 || l.FeedPageMax > 10000 {
		add(bad("limits.feed_page_max", "must be between 1 and 10000 (got %d)", l.FeedPageMax))
	}
	if l.BatchMax < 1 || l.BatchMax > 10000 {
		add(bad("limits.batch_max", "must be between 1 and 10000 (got %d)", l.BatchMax))
	}
	if l.Store != "memory" && l.Store != "storage" {
		add(bad("limits.store", "must be memory or storage (got %q)", l.Store))
	}
	if l.SyncInterval < 10*time.Millisecond || l.SyncInterval > time.Minute {
		add(bad("limits.sync_interval", "must be between 10ms and 1m (got %s)", l.SyncInterval))
	}
	switch c.Log.Format {
	case "auto", "json", "text":
	default:
		add(bad("log.format", "must be one of auto, json, text (got %q)", c.Log.Format))
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		add(bad("log.level", "must be one of debug, info, warn, error (got %q)", c.Log.Level))
	}
	switch strings.ToLower(c.Log.Access) {
	case "debug", "info", "warn", "off":
	default:
		add(bad("log.access", "must be one of debug, info, warn, off (got %q)", c.Log.Access))
	}
	if c.Log.AccessSample < 1 || c.Log.AccessSample > 1_000_000 {
		add(bad("log.access_sample", "must be between 1 and 1000000 (got %d)", c.Log.AccessSample))
	}
	if c.Metrics.Listen != "" {
		if _, port, err := net.SplitHostPort(c.Metrics.Listen); err != nil {
			add(bad("metrics.listen", "must be host:port, or \"\" to turn metrics off (got %q)", c.Metrics.Listen))
		} else if port != "0" && c.Metrics.Listen == c.Server.Listen {
			add(bad("metrics.listen", "must differ from server.listen (%s)", c.Server.Listen))
		}
	}
	if c.Web.Signup != "open" && c.Web.Signup != "closed" {
		add(bad("web.signup", "must be open or closed (got %q)", c.Web.Signup))
	}
	if c.Web.SessionTTL < time.Minute || c.Web.SessionTTL > 90*24*time.Hour {
		add(bad("web.session_ttl", "must be between 1m and 2160h (90 days) (got %s)", c.Web.SessionTTL))
	}
	if c.Web.LoginAttempts < 1 || c.Web.LoginAttemptsPerIP < 1 {
		add(bad("web.login_attempts", "web.login_attempts and web.login_attempts_per_ip must be at least 1"))
	}
	if c.Web.LoginWindow < time.Second || c.Web.LoginWindow > 24*time.Hour {
		add(bad("web.login_window", "must be between 1s and 24h (got %s)", c.Web.LoginWindow))
	}
	return errors.Join(errs...)
}

// ParsePrefix parses a CIDR, or a bare IP as a single-address prefix.
func ParsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(strings.TrimSpace(s)); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR or IP address", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}
