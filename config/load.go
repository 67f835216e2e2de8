package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/threatd/threatd/core/firewall/registries"
)

// Defaults are the built-in values of docs/configuration.md, with each
// firewall registry's from its adapter (firewallDefaults).
func Defaults() map[string]any {
	d := builtIn()
	maps.Copy(d, firewallDefaults())
	return d
}

// firewallDefaults are firewall.<registry>.* for every registry the
// firewall serves: a registry's adapter names its public upstream.
func firewallDefaults() map[string]any {
	d := map[string]any{}
	for _, a := range registries.All() {
		key, up := "firewall."+a.Registry(), a.Defaults()
		d[key+".upstream"] = up.URL
		d[key+".private_upstream"] = ""
		d[key+".file_hosts"] = append([]string{}, up.FileHosts...)
	}
	return d
}

// firewallRegistries takes the settings of each registry the firewall
// serves (firewall.<registry>.*) out of k, which then holds the others:
// a registry's settings are the same keys whatever the registry, and an
// unknown registry stays in k, an unknown key.
func firewallRegistries(k *koanf.Koanf, conf koanf.UnmarshalConf) (map[string]FirewallUpstream, error) {
	out := map[string]FirewallUpstream{}
	for _, name := range registries.Names() {
		key := "firewall." + name
		var up FirewallUpstream
		if err := k.Cut(key).UnmarshalWithConf("", &up, conf); err != nil {
			return nil, fmt.Errorf("invalid configuration: %s", describeDecodeError(err, key+"."))
		}
		k.Delete(key)
		out[name] = up
	}
	return out, nil
}

func builtIn() map[string]any {
	return map[string]any{
		"server.listen":                      "127.0.0.1:8443",
		"server.base_path":                   "/functions/v1",
		"server.tls.mode":                    TLSSelfSigned,
		"server.tls.names":                   []string{},
		"server.tls.cert_file":               "",
		"server.tls.key_file":                "",
		"server.trusted_proxies":             []string{},
		"server.max_body_bytes":              262144,
		"data_dir":                           "./data",
		"plugins.dir":                        "", // beside the executable: DefaultPluginsDir
		"storage.plugin":                     "sqlite",
		"storage.dsn":                        "",
		"storage.settings":                   map[string]any{},
		"exporters":                          []string{"stix", "anomali", "osv", "misp"},
		"exporter_routes":                    []any{},
		"sources":                            []any{},
		"import.max_affected":                1000,
		"cache.freshness":                    "1s",
		"cache.records":                      10000,
		"cache.spill":                        true,
		"limits.submissions_per_hour":        10,
		"limits.submissions_per_hour_paid":   0,
		"limits.new_user_max_unverified":     3,
		"limits.new_user_verified_to_lift":   3,
		"limits.per_ip_per_minute":           300,
		"limits.per_token_per_minute.free":   60,
		"limits.per_token_per_minute.paid":   600,
		"limits.sightings_per_hour.free":     600,
		"limits.sightings_per_hour.paid":     6000,
		"limits.latest_count":                100,
		"limits.feed_max_window":             "168h",
		"limits.feed_page_max":               1000,
		"limits.batch_max":                   1000,
		"limits.store":                       "memory",
		"limits.sync_interval":               "250ms",
		"log.level":                          "info",
		"log.format":                         "auto",
		"log.access":                         "info",
		"log.access_sample":                  1,
		"metrics.listen":                     "127.0.0.1:9464",
		"web.enabled":                        true,
		"web.signup":                         "open",
		"web.session_ttl":                    "168h",
		"web.login_attempts":                 10,
		"web.login_attempts_per_ip":          50,
		"web.login_window":                   "15m",
		"firewall.enabled":                   true,
		"firewall.allow_private":             false,
		"firewall.upstream_timeout":          "60s",
		"firewall.download_timeout":          "10m",
		"firewall.private":                   map[string]any{},
		"firewall.cache":                     "1GiB",
		"firewall.per_ip_per_minute":         20000,
		"firewall.per_token_per_minute":      20000,
		"firewall.rules.malicious":           "block",
		"firewall.rules.quarantine":          "block",
		"firewall.rules.install_scripts":     "warn",
		"firewall.rules.suspicious":          "block",
		"firewall.quarantine.until_analysed": true,
		"firewall.quarantine.default":        "48h",
		"firewall.quarantine.missing_time":   "hold",
		"firewall.decisions_keep":            "720h",
		"firewall.ledger_keep":               "2160h",
		"firewall.ledger":                    true,
		"firewall.ledger_ip":                 "full",
		"firewall.reviewer_waiver_max":       "168h",
		"firewall.oci.listen":                "",
		"firewall.oci.upstream":              "https://registry-1.docker.io",
		"firewall.oci.file_hosts":            []string{"https://auth.docker.io", "https://production.cloudflare.docker.com"},
		"scan.max_bytes":                     "8MiB",
		"analysis.analyzers":                 []string{"rules"},
		"analysis.rules_dir":                 "",
		"analysis.report_severity":           "high",
		"analysis.max_archive_bytes":         "256MiB",
		"analysis.max_files":                 100_000,
		"analysis.max_file_bytes":            "32MiB",
		"analysis.timeout":                   "60s",
		"analysis.workers":                   0,
		"analysis.max_queued":                10_000,
		"analysis.max_wait":                  "24h",
		"community.dispute_votes":            3,
		"blocklists.rpz_zone":                "rpz.threatd.",
		"blocklists.suricata_sid_base":       4_100_000,
		"siem.syslog.address":                "",
		"siem.syslog.format":                 "cef",
		"siem.syslog.ca_file":                "",
		"webhooks.allow_private":             false,
		"webhooks.timeout":                   "10s",
		"webhooks.retry_base":                "10s",
		"webhooks.retry_max":                 "1h",
		"webhooks.retry_window":              "24h",
		"webhooks.max_pending":               100000,
		"webhooks.keep_finished":             "168h",
		"webhooks.poll":                      "1s",
		"webhooks.concurrency":               8,
	}
}

// EnvPrefix is the prefix of configuration environment variables.
const EnvPrefix = "THREATD_"

// topLevelKeys are the first segments of valid keys; other THREATD_*
// variables (e.g. THREATD_TEST_*) are not configuration and are ignored.
var topLevelKeys = map[string]bool{
	"server": true, "data_dir": true, "plugins": true, "storage": true, "exporters": true,
	"exporter_routes": true, "sources": true, "import": true, "cache": true, "limits": true, "log": true, "web": true, "metrics": true, "firewall": true, "scan": true, "webhooks": true, "analysis": true, "community": true, "blocklists": true, "siem": true,
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
	conf := func() koanf.UnmarshalConf {
		return koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
			DecodeHook: mapstructure.ComposeDecodeHookFunc(
				mapstructure.StringToTimeDurationHookFunc(),
				mapstructure.StringToSliceHookFunc(","),
				mapstructure.TextUnmarshallerHookFunc(),
			),
			WeaklyTypedInput: true,
			ErrorUnused:      true,
			TagName:          "koanf",
		}}
	}
	regs, err := firewallRegistries(k, conf())
	if err != nil {
		return Config{}, err
	}
	var c Config
	if err := k.UnmarshalWithConf("", &c, conf()); err != nil {
		return Config{}, fmt.Errorf("invalid configuration: %s", describeDecodeError(err, ""))
	}
	c.Firewall.Registries = regs
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
// the dotted key: "unknown key: server.lisen", "limits.batch_max: cannot
// parse …"; prefix is the key of what was decoded ("" for the whole).
func describeDecodeError(err error, prefix string) string {
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
				if parent != "" && !strings.HasPrefix(parent, "config.") {
					k = parent + "." + k
				}
				out = append(out, "unknown key: "+prefix+k)
			}
			continue
		}
		if m := quotedKey.FindStringSubmatch(line); m != nil {
			line = prefix + m[1] + ": " + m[2]
		}
		out = append(out, line)
	}
	return strings.Join(out, "; ")
}
