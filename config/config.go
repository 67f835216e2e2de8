// Package config loads threatd's configuration with koanf in a fixed order —
// built-in defaults, a YAML file, THREATD_ environment variables (with "__"
// for nesting), command-line flags; later wins — and validates it, naming the
// bad key. There is no global configuration: Load returns a value that is
// passed to what needs it.
package config

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
	Community      Community       `koanf:"community"`
	Blocklists     Blocklists      `koanf:"blocklists"`
	SIEM           SIEM            `koanf:"siem"`
	Analysis       Analysis        `koanf:"analysis"`
}

// Analysis configures package analysis (docs/analysis.md).
type Analysis struct {
	// Analyzers are the analyzer plugins run on each archive
	// (threatd-analyzer-<name>).
	Analyzers []string `koanf:"analyzers"`
	// RulesDir holds the operator's .yar files, read by the rules
	// analyzer beside threatd's own ("" = none).
	RulesDir string `koanf:"rules_dir"`
	// ReportSeverity is the weakest new finding that makes a version
	// suspicious.
	ReportSeverity  string        `koanf:"report_severity"`
	MaxArchiveBytes ByteSize      `koanf:"max_archive_bytes"`
	MaxFiles        int           `koanf:"max_files"`
	MaxFileBytes    ByteSize      `koanf:"max_file_bytes"`
	Timeout         time.Duration `koanf:"timeout"`
	// Workers analyse at once in the daemon (0 = half the CPUs, at
	// least 1).
	Workers int `koanf:"workers"`
	// MaxQueued bounds the unfinished analyses of one database.
	MaxQueued int `koanf:"max_queued"`
	// MaxWait is how long past its quarantine a version waits for its
	// analysis (firewall.quarantine.until_analysed).
	MaxWait time.Duration `koanf:"max_wait"`
}

// SIEM configures the syslog messages to a SIEM (docs/siem.md).
type SIEM struct {
	Syslog Syslog `koanf:"syslog"`
}

// Syslog is one syslog receiver.
type Syslog struct {
	// Address is udp://, tcp:// or tls://host:port ("" = off).
	Address string `koanf:"address"`
	// Format is cef or json.
	Format string `koanf:"format"`
	// CAFile is a PEM file of the certificates a tls:// receiver's is
	// checked against ("" = the system's).
	CAFile string `koanf:"ca_file"`
}

// Blocklists configures the block lists (docs/blocklists.md).
type Blocklists struct {
	// RPZZone is the RPZ zone's name (ending in a dot).
	RPZZone string `koanf:"rpz_zone"`
	// SuricataSIDBase is the first sid of the Suricata rules.
	SuricataSIDBase int64 `koanf:"suricata_sid_base"`
}

// Community configures the community signals (docs/api/sightings.md).
type Community struct {
	// DisputeVotes is how many distinct users' false-positive votes put a
	// verified report back in review (0: votes never do).
	DisputeVotes int `koanf:"dispute_votes"`
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

// PluginCacheDir is where plugins keep what saves work between runs (an
// import's archive heads): data_dir/plugin-cache, when data_dir exists
// ("" otherwise: an import into PostgreSQL from a directory without one
// makes none). Removing it loses nothing but that work.
func (c Config) PluginCacheDir() string {
	if c.DataDir == "" {
		return ""
	}
	if fi, err := os.Stat(c.DataDir); err != nil || !fi.IsDir() {
		return ""
	}
	return filepath.Join(c.DataDir, "plugin-cache")
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
	// Names are the DNS names and addresses the self-signed certificate
	// covers besides localhost, 127.0.0.1, ::1, the listen address and
	// the machine's host name: those other machines reach it by.
	Names []string `koanf:"names"`
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
	// Full: the paths are the source's whole list (threatd import --full).
	Full bool `koanf:"full"`
	// Trust is verified (the default) or pending (threatd import --trust).
	Trust string `koanf:"trust"`
}

// Cache bounds how stale in-memory caches may be across daemons.
type Cache struct {
	Freshness time.Duration `koanf:"freshness"`
	// Records is how many full reports the check path keeps in memory
	// (the index itself always holds every verified report).
	Records int `koanf:"records"`
	// Spill keeps every verified report as a check shows it in a file
	// under data_dir/cache, so that a check that matches a report outside
	// Records reads a local file instead of storage.
	Spill bool `koanf:"spill"`
}

// PerTier is one number per tier.
type PerTier struct {
	Free int `koanf:"free"`
	Paid int `koanf:"paid"`
}

// Limits are the service's quotas and rate limits.
type Limits struct {
	SubmissionsPerHour     int     `koanf:"submissions_per_hour"`
	SubmissionsPerHourPaid int     `koanf:"submissions_per_hour_paid"`
	NewUserMaxUnverified   int     `koanf:"new_user_max_unverified"`
	NewUserVerifiedToLift  int     `koanf:"new_user_verified_to_lift"`
	PerIPPerMinute         int     `koanf:"per_ip_per_minute"`
	PerTokenPerMinute      PerTier `koanf:"per_token_per_minute"`
	// SightingsPerHour bounds the sightings (false-positive votes
	// included) one user sends an hour, by tier (0: no limit).
	SightingsPerHour PerTier       `koanf:"sightings_per_hour"`
	LatestCount      int           `koanf:"latest_count"`
	FeedMaxWindow    time.Duration `koanf:"feed_max_window"`
	FeedPageMax      int           `koanf:"feed_page_max"`
	BatchMax         int           `koanf:"batch_max"`
	Store            string        `koanf:"store"`
	SyncInterval     time.Duration `koanf:"sync_interval"`
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
	Enabled bool `koanf:"enabled"`
	// Registries are firewall.<registry>.*, one for each registry the
	// firewall serves (core/firewall/registries), by its name.
	Registries map[string]FirewallUpstream `koanf:"-"`
	// Private holds name globs per registry (npm, pypi, go …) that reports
	// never block: internal packages.
	Private map[string][]string `koanf:"private"`
	// Cache bounds the upstream documents and files kept on disk under
	// data_dir/firewall-cache (0: none kept).
	Cache ByteSize `koanf:"cache"`
	// The firewall's own request budgets (0 = unlimited): one install makes
	// hundreds of requests.
	PerIPPerMinute    int `koanf:"per_ip_per_minute"`
	PerTokenPerMinute int `koanf:"per_token_per_minute"`
	// AllowPrivate lets upstream and file hosts named by host name resolve
	// to private, loopback and link-local addresses (an upstream given as
	// an IP address, and every private_upstream, may always).
	AllowPrivate bool `koanf:"allow_private"`
	// UpstreamTimeout bounds fetching a document from an upstream (and
	// waiting for any answer); DownloadTimeout bounds streaming one file.
	UpstreamTimeout time.Duration `koanf:"upstream_timeout"`
	DownloadTimeout time.Duration `koanf:"download_timeout"`
	// Rules are firewall.rules.<rule>: each rule's action (malicious,
	// quarantine, install_scripts, suspicious: block, warn, monitor or off).
	Rules map[string]string `koanf:"rules"`
	// Quarantine holds new versions back (docs/firewall.md).
	Quarantine FirewallQuarantine `koanf:"quarantine"`
	// DecisionsKeep is how long decisions are kept.
	DecisionsKeep time.Duration `koanf:"decisions_keep"`
	// LedgerKeep is how long the ledger of served artifacts is kept;
	// LedgerIP how much of a client's address it keeps (full, truncated
	// to its /24 or /48, none).
	LedgerKeep time.Duration `koanf:"ledger_keep"`
	LedgerIP   string        `koanf:"ledger_ip"`
	// Ledger turns the ledger (and so the exposures of what was served)
	// off when false.
	Ledger bool `koanf:"ledger"`
	// ReviewerWaiverMax is the longest waiver a reviewer may make; a
	// longer one, or one of a name glob, needs an administrator.
	ReviewerWaiverMax time.Duration `koanf:"reviewer_waiver_max"`
	// OCI is the container image registry (firewall.oci.*).
	OCI FirewallOCI `koanf:"oci"`
}

// FirewallOCI is firewall.oci: an OCI distribution registry on a
// listener of its own, in front of one upstream registry.
type FirewallOCI struct {
	// Listen is its host:port ("" = off); TLS as the API's.
	Listen string `koanf:"listen"`
	// Upstream is the registry it fronts.
	Upstream string `koanf:"upstream"`
	// FileHosts are the further origins it fetches from: the upstream's
	// token service and the storage its blobs redirect to.
	FileHosts []string `koanf:"file_hosts"`
}

// FirewallQuarantine is firewall.quarantine.
type FirewallQuarantine struct {
	// Default is every ecosystem's window (0 = off).
	Default time.Duration `koanf:"default"`
	// Ecosystems override it per ecosystem.
	Ecosystems map[string]time.Duration `koanf:"ecosystems"`
	// Packages override both for names a glob matches; the most
	// specific entry wins.
	Packages []QuarantinePackage `koanf:"packages"`
	// Exclude are name globs per ecosystem never quarantined.
	Exclude map[string][]string `koanf:"exclude"`
	// MissingTime is hold or allow: what a version without a publish
	// time gets.
	MissingTime string `koanf:"missing_time"`
	// UntilAnalysed holds a version whose quarantine ends before its
	// analysis does until the analysis ends (at most analysis.max_wait).
	UntilAnalysed bool `koanf:"until_analysed"`
}

// QuarantinePackage is one firewall.quarantine.packages entry.
type QuarantinePackage struct {
	Ecosystem string        `koanf:"ecosystem"`
	Name      string        `koanf:"name"`
	Duration  time.Duration `koanf:"duration"`
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

// FirewallUpstream is where one registry's packages come from.
type FirewallUpstream struct {
	// Upstream is the public registry.
	Upstream string `koanf:"upstream"`
	// PrivateUpstream serves the names of firewall.private ("" = such
	// names are refused, never fetched from the public registry).
	PrivateUpstream string `koanf:"private_upstream"`
	// FileHosts are further origins the upstream's documents may link
	// files to (PyPI's files.pythonhosted.org).
	FileHosts []string `koanf:"file_hosts"`
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
