package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/threatd/threatd/core/siem"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/registries"
)

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
	for i, n := range c.Server.TLS.Names {
		if !CertName(n) {
			add(bad(fmt.Sprintf("server.tls.names[%d]", i), "must be a DNS name (threatd.example, *.internal.example) or an IP address, without scheme or port (got %q)", n))
		}
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
	for _, reg := range slices.Sorted(maps.Keys(c.Firewall.Registries)) {
		up := c.Firewall.Registries[reg]
		key := "firewall." + reg
		if !httpURL(up.Upstream) {
			add(bad(key+".upstream", "must be an http(s) URL such as https://registry.npmjs.org (got %q)", up.Upstream))
		}
		if up.PrivateUpstream != "" && !httpURL(up.PrivateUpstream) {
			add(bad(key+".private_upstream", "must be an http(s) URL of your own registry, or empty (got %q)", up.PrivateUpstream))
		}
		for i, h := range up.FileHosts {
			if u, err := url.Parse(h); err != nil || !httpURL(h) || strings.Trim(u.Path, "/") != "" {
				add(bad(fmt.Sprintf("%s.file_hosts[%d]", key, i), "must be an http(s) origin such as https://files.pythonhosted.org, without a path (got %q)", h))
			}
		}
	}
	if oc := c.Firewall.OCI; oc.Listen != "" {
		if _, port, err := net.SplitHostPort(oc.Listen); err != nil {
			add(bad("firewall.oci.listen", "must be host:port, or \"\" to turn the image registry off (got %q)", oc.Listen))
		} else if port != "0" && (oc.Listen == c.Server.Listen || oc.Listen == c.Metrics.Listen) {
			add(bad("firewall.oci.listen", "must differ from server.listen and metrics.listen (got %q)", oc.Listen))
		}
	}
	if !httpURL(c.Firewall.OCI.Upstream) {
		add(bad("firewall.oci.upstream", "must be an http(s) URL such as https://registry-1.docker.io (got %q)", c.Firewall.OCI.Upstream))
	}
	for i, h := range c.Firewall.OCI.FileHosts {
		if u, err := url.Parse(h); err != nil || !httpURL(h) || strings.Trim(u.Path, "/") != "" {
			add(bad(fmt.Sprintf("firewall.oci.file_hosts[%d]", i), "must be an http(s) origin such as https://auth.docker.io, without a path (got %q)", h))
		}
	}
	if c.Firewall.UpstreamTimeout < time.Second || c.Firewall.UpstreamTimeout > time.Hour {
		add(bad("firewall.upstream_timeout", "must be between 1s and 1h (got %s)", c.Firewall.UpstreamTimeout))
	}
	if c.Firewall.DownloadTimeout < time.Second || c.Firewall.DownloadTimeout > 24*time.Hour {
		add(bad("firewall.download_timeout", "must be between 1s and 24h (got %s)", c.Firewall.DownloadTimeout))
	}
	for reg, globs := range c.Firewall.Private {
		if _, ok := c.Firewall.Registries[reg]; !ok {
			add(bad("firewall.private."+reg, "is not a registry the firewall serves (%s)", strings.Join(registries.Names(), ", ")))
		}
		for i, g := range globs {
			if strings.TrimSpace(g) == "" {
				add(bad(fmt.Sprintf("firewall.private.%s[%d]", reg, i), "must not be empty"))
			}
		}
	}
	if err := firewall.CheckSettings(c.FirewallSettings()); err != nil {
		key, msg, _ := strings.Cut(err.Error(), ": ")
		add(bad(key, "%s", msg))
	}
	if c.Firewall.ReviewerWaiverMax < 0 || c.Firewall.ReviewerWaiverMax > firewall.MaxWaiverFor {
		add(bad("firewall.reviewer_waiver_max", "must be between 0 (only administrators waive) and 8784h (got %s)", c.Firewall.ReviewerWaiverMax))
	}
	if c.Firewall.DecisionsKeep < time.Hour {
		add(bad("firewall.decisions_keep", "must be at least 1h (got %s)", c.Firewall.DecisionsKeep))
	}
	if c.Firewall.LedgerKeep < 24*time.Hour {
		add(bad("firewall.ledger_keep", "must be at least 24h (got %s)", c.Firewall.LedgerKeep))
	}
	if ip := c.Firewall.LedgerIP; ip != firewall.LedgerIPFull && ip != firewall.LedgerIPTruncated && ip != firewall.LedgerIPNone {
		add(bad("firewall.ledger_ip", "must be full, truncated or none (got %q)", ip))
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
	if c.Limits.SightingsPerHour.Free < 0 || c.Limits.SightingsPerHour.Paid < 0 {
		add(bad("limits.sightings_per_hour", "must be 0 (no limit) or more (got free %d, paid %d)", c.Limits.SightingsPerHour.Free, c.Limits.SightingsPerHour.Paid))
	}
	if c.Community.DisputeVotes < 0 || c.Community.DisputeVotes > 1000 {
		add(bad("community.dispute_votes", "must be between 0 (votes never dispute a report) and 1000 (got %d)", c.Community.DisputeVotes))
	}
	if z := c.Blocklists.RPZZone; !strings.HasSuffix(z, ".") || !blocklistZone(strings.TrimSuffix(z, ".")) {
		add(bad("blocklists.rpz_zone", "must be a domain name ending in a dot, such as rpz.threatd. (got %q)", z))
	}
	if b := c.Blocklists.SuricataSIDBase; b < 1 || b > 2_000_000_000 {
		add(bad("blocklists.suricata_sid_base", "must be between 1 and 2000000000 (got %d)", b))
	}
	if a := c.SIEM.Syslog.Address; a != "" {
		if _, _, err := siem.ParseAddress(a); err != nil {
			add(bad("siem.syslog.address", "%s", err.Error()))
		}
	}
	if f := c.SIEM.Syslog.Format; f != siem.FormatCEF && f != siem.FormatJSON {
		add(bad("siem.syslog.format", "must be cef or json (got %q)", f))
	}
	if c.SIEM.Syslog.CAFile != "" && !strings.HasPrefix(c.SIEM.Syslog.Address, "tls://") {
		add(bad("siem.syslog.ca_file", "is for a tls:// siem.syslog.address (got %q)", c.SIEM.Syslog.Address))
	}
	c.validateAnalysis(add)
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
		if err := core.CheckTrust(key+".trust", s.Trust); err != nil {
			add(err)
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

// httpURL says whether s is an absolute http(s) URL without query or fragment.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.RawQuery == "" && u.Fragment == ""
}

// FirewallSettings are the firewall's rules and quarantine as
// core/firewall takes them.
func (c Config) FirewallSettings() firewall.Settings {
	q := c.Firewall.Quarantine
	s := firewall.Settings{Actions: map[string]string{}, Quarantine: firewall.Quarantine{
		Default: q.Default, Ecosystems: map[string]time.Duration{}, Exclude: map[string][]string{}, MissingTime: q.MissingTime,
		UntilAnalysed: q.UntilAnalysed, MaxWait: c.Analysis.MaxWait}}
	maps.Copy(s.Actions, c.Firewall.Rules)
	maps.Copy(s.Quarantine.Ecosystems, q.Ecosystems)
	for eco, globs := range q.Exclude {
		s.Quarantine.Exclude[eco] = slices.Clone(globs)
	}
	for _, p := range q.Packages {
		s.Quarantine.Packages = append(s.Quarantine.Packages, firewall.PackageWindow{Ecosystem: p.Ecosystem, Name: p.Name, Duration: p.Duration})
	}
	return s
}

// blocklistZone says whether z (without its final dot) can name the RPZ
// zone: labels of letters, digits, '-' and '_', at most 63 bytes each,
// 200 in all (the names listed under it need the rest).
func blocklistZone(z string) bool {
	if z == "" || len(z) > 200 {
		return false
	}
	for _, label := range strings.Split(z, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// CertName says whether s is a name a certificate can cover: an IP
// address, or a DNS name of letters, digits and hyphens (a leading "*."
// for a wildcard).
func CertName(s string) bool {
	if net.ParseIP(s) != nil {
		return true
	}
	s = strings.TrimPrefix(s, "*.")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
