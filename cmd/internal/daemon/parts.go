package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/api"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/cache"
	"github.com/threatd/threatd/core/firewall/proxy"
	"github.com/threatd/threatd/core/firewall/registries"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/core/webhooks"
	"github.com/threatd/threatd/core/webhooks/delivery"
	"github.com/threatd/threatd/plugins"
)

// firewallOptions builds the registry firewall of the configuration (nil
// when firewall.enabled is false): its policy over the index, and its
// upstream cache under data_dir/firewall-cache.
func firewallOptions(cfg config.Config, idx *index.Index, log *slog.Logger, cacheDir string) (*proxy.Options, error) {
	if !cfg.Firewall.Enabled {
		return nil, nil
	}
	policy, err := firewall.NewPolicy(idx, cfg.Firewall.Private, registries.Names())
	if err == nil {
		err = policy.Configure(cfg.FirewallSettings())
	}
	if err != nil {
		return nil, err
	}
	upstreams := map[string]proxy.Upstream{}
	var origins []cache.Origin
	for _, a := range registries.All() {
		reg := a.Registry()
		up := cfg.Firewall.Registries[reg]
		if r, ok := a.(firewall.Rooted); ok {
			// The setting names a document (NuGet's service index);
			// the firewall fetches below its root.
			for _, u := range []*string{&up.Upstream, &up.PrivateUpstream} {
				if *u == "" {
					continue
				}
				if *u, err = r.Root(*u); err != nil {
					return nil, fmt.Errorf("firewall.%s: %w", reg, err)
				}
			}
		}
		upstreams[reg] = proxy.Upstream{URL: up.Upstream, Private: up.PrivateUpstream, FileHosts: up.FileHosts}
		origins = append(origins, cache.Origin{URL: up.Upstream})
		if up.PrivateUpstream != "" {
			origins = append(origins, cache.Origin{URL: up.PrivateUpstream, Private: true})
		}
		for _, h := range up.FileHosts {
			origins = append(origins, cache.Origin{URL: h})
		}
	}
	client, err := cache.NewClient(origins, cfg.Firewall.AllowPrivate)
	if err != nil {
		return nil, err
	}
	upstreamCache, err := cache.Open(cacheDir, int64(cfg.Firewall.Cache), client)
	if err != nil {
		return nil, err
	}
	var ociOpts *proxy.OCIOptions
	if oc := cfg.Firewall.OCI; oc.Listen != "" {
		ociOrigins := []cache.Origin{{URL: oc.Upstream}}
		allowed := cache.Origins{}
		for _, raw := range append([]string{oc.Upstream}, oc.FileHosts...) {
			ociOrigins = append(ociOrigins, cache.Origin{URL: raw})
			if u, err := url.Parse(raw); err == nil {
				allowed[cache.OriginOf(u)] = true
			}
		}
		ociClient, err := cache.NewClient(ociOrigins, cfg.Firewall.AllowPrivate)
		if err != nil {
			return nil, fmt.Errorf("firewall.oci: %w", err)
		}
		ociOpts = &proxy.OCIOptions{Upstream: oc.Upstream, Client: ociClient, Origins: allowed}
	}
	return &proxy.Options{
		OCI:      ociOpts,
		Adapters: registries.All(), Upstreams: upstreams, Policy: policy, Cache: upstreamCache, Recent: firewall.NewRecent(500),
		PerIPPerMinute: cfg.Firewall.PerIPPerMinute, PerTokenPerMinute: cfg.Firewall.PerTokenPerMinute,
		UpstreamTimeout: cfg.Firewall.UpstreamTimeout, DownloadTimeout: cfg.Firewall.DownloadTimeout, ReviewerWaiverMax: cfg.Firewall.ReviewerWaiverMax,
	}, nil
}

// limits are the submit limits of the configuration.
func limits(cfg config.Config) core.Limits {
	return core.Limits{
		SubmissionsPerHour:     cfg.Limits.SubmissionsPerHour,
		SubmissionsPerHourPaid: cfg.Limits.SubmissionsPerHourPaid,
		NewUserMaxUnverified:   cfg.Limits.NewUserMaxUnverified,
		NewUserVerifiedToLift:  cfg.Limits.NewUserVerifiedToLift,
	}
}

// exportRoutes returns the built-in exporter endpoints plus the configured
// exporter_routes, and the exporters to run (configured + routed).
func exportRoutes(cfg config.Config) ([]api.ExportRoute, []string, error) {
	routes := append([]api.ExportRoute{}, api.BuiltinExportRoutes...)
	taken := map[string]bool{}
	for _, p := range api.RoutePaths() {
		taken[p] = true
	}
	for _, r := range routes {
		taken[r.Path] = true
	}
	names := append([]string{}, cfg.Exporters...)
	for i, r := range cfg.ExporterRoutes {
		if taken[r.Path] {
			return nil, nil, fmt.Errorf("invalid configuration: exporter_routes[%d].path: %s is already an endpoint", i, r.Path)
		}
		taken[r.Path] = true
		tier := core.TierPaid
		if r.Tier == string(core.TierFree) {
			tier = core.TierFree
		}
		routes = append(routes, api.ExportRoute{Path: r.Path, Exporter: r.Exporter, Tier: tier, PassParams: true, Select: r.Select})
		if !slices.Contains(names, r.Exporter) {
			names = append(names, r.Exporter)
		}
	}
	return routes, names, nil
}

// enabledExporters refuses exporters the configuration does not name.
type enabledExporters struct {
	pool    *plugins.Exporters
	enabled []string
}

// States is each exporter's state, for /healthz.
func (x enabledExporters) States() map[string]string { return x.pool.States() }

func (x enabledExporters) Export(ctx context.Context, name string, req core.ExportRequest, w core.ExportWriter) error {
	if !slices.Contains(x.enabled, name) {
		return &core.ExporterError{Exporter: name, Kind: core.ErrExporterUnavailable, Cause: errors.New("not enabled (configuration key exporters)")}
	}
	return x.pool.Export(ctx, name, req, w)
}

// accessLog turns log.access and log.access_sample into the API's setting
// (config.Validate has checked the level).
func accessLog(l config.Log) api.AccessLog {
	a := api.AccessLog{Sample: l.AccessSample, Off: strings.EqualFold(l.Access, "off")}
	_ = a.Level.UnmarshalText([]byte(l.Access))
	return a
}

// webhookDispatcher is the daemon's webhook delivery loop (docs/webhooks.md):
// every daemon runs it, the holder of the storage lease delivers.
func webhookDispatcher(cfg config.Config, store port.Store, log *slog.Logger, metrics *api.Metrics, signals *community.View, version string) *delivery.Dispatcher {
	w := cfg.Webhooks
	return &delivery.Dispatcher{
		Store:     store,
		Community: signals,
		Policy:    webhooks.RetryPolicy{Base: w.RetryBase, Max: w.RetryMax, Window: w.RetryWindow},
		Timeout:   w.Timeout, AllowPrivate: w.AllowPrivate, MaxPending: w.MaxPending, KeepFinished: w.KeepFinished,
		Poll: w.Poll, Concurrency: w.Concurrency, Holder: leaseHolder(), UserAgent: "threatd/" + version + " (webhooks)",
		Log: log, Observer: metrics,
	}
}

// siemTLS is the TLS configuration of a tls:// syslog receiver: its
// certificate checked against caFile's ("" = the system's roots).
func siemTLS(caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("siem.syslog.ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("siem.syslog.ca_file: %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool}, nil
}

// LocalSite is the web site's address as the configured daemon serves it
// (report pages are /threats/<id> there).
func LocalSite(cfg config.Config) string {
	scheme := "https"
	if cfg.Server.TLS.Mode == config.TLSOff {
		scheme = "http"
	}
	host, port, err := net.SplitHostPort(cfg.Server.Listen)
	if err != nil {
		return scheme + "://" + cfg.Server.Listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
