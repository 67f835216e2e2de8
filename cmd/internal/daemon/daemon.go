// Package daemon assembles threatd's daemon from a configuration and an open
// store: the HTTP handler (the API and the web site), the firewall's image
// registry, and the background services (the change feed and its
// subscribers, the index load, sources, webhooks, usage and limits). `threatd
// serve` adds the listeners around it; the in-process tests
// (daemon_test.go) serve the same handler from an httptest server over the
// SQLite plugin.
package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/core/api"
	"github.com/threatd/threatd/core/blocklist"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/core/exposure"
	"github.com/threatd/threatd/core/feed"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/misp"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/core/ratelimit"
	"github.com/threatd/threatd/core/siem"
	"github.com/threatd/threatd/core/web"
	"github.com/threatd/threatd/plugins"
)

// Options are what a daemon is made of.
type Options struct {
	Config  config.Config
	Store   port.Store // open and migrated
	Log     *slog.Logger
	Metrics *api.Metrics
	Version string
}

// Daemon is an assembled daemon: Start runs its services, Handler serves
// its API and web site, Close releases what it holds once both are done.
type Daemon struct {
	// Handler serves the API and the web site (server.listen).
	Handler http.Handler
	// OCI serves the firewall's image registry (firewall.oci.listen); nil
	// when it is off.
	OCI http.Handler

	services []service
	closers  []func()
}

// Start runs the background services until ctx ends: they should run
// until the HTTP server has drained (a request still in flight may need
// them). failed ends when one fails; wait waits for all of them and
// returns the first failure.
func (d *Daemon) Start(ctx context.Context) (wait func() error, failed context.Context) {
	return runServices(ctx, d.services)
}

// Close waits for the decisions and sightings still being written, then
// stops the exporter plugins and the index spill. Call it after the
// services have stopped.
func (d *Daemon) Close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}

func (d *Daemon) add(s ...service) { d.services = append(d.services, s...) }

// New assembles the daemon. ctx bounds the writers of decisions and
// sightings (they drain when it ends) and the caches that refresh in the
// background.
func New(ctx context.Context, o Options) (_ *Daemon, err error) {
	cfg, store, log, metrics := o.Config, o.Store, o.Log, o.Metrics
	d := &Daemon{}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	poll := max(cfg.Cache.Freshness/2, 10*time.Millisecond)

	// The hot read path: the index of verified reports loads in the
	// background while the API already answers (/healthz says "starting",
	// checks answer 503 until it is loaded); then the follower applies the
	// change feed so that changes by any process show within cache.freshness.
	idx := index.New(store, cfg.Cache.Records)
	if cfg.Cache.Spill {
		if err := idx.EnableSpill(filepath.Join(cfg.DataDir, "cache")); err != nil {
			return nil, fmt.Errorf("cache.spill: %w (cache.spill: false runs without it)", err)
		}
		d.closers = append(d.closers, idx.CloseSpill)
	}
	principals := index.NewPrincipals(core.NewAccounts(store), cfg.Cache.Freshness)
	// The community signals every record carries (sighting counts,
	// disputes, submitters' records, campaigns), read as often as the
	// change feed, whose review decisions move submitters' records.
	signals := community.New(store, log)
	// Campaign suggestions, shared by the API and the web site.
	suggestions := &community.Suggestions{}
	// The block lists: every verified report read once in the background,
	// then each report the change feed brings.
	lists := blocklist.NewService(store, cfg.Blocklists.RPZZone)
	lists.SetSIDBase(cfg.Blocklists.SuricataSIDBase)
	// The SIEM's syslog messages (siem.syslog.address): firewall decisions
	// and the change feed's verifications, revisions and withdrawals.
	var toSIEM *siem.Service
	if cfg.SIEM.Syslog.Address != "" {
		tlsConfig, err := siemTLS(cfg.SIEM.Syslog.CAFile)
		if err != nil {
			return nil, err
		}
		sender, err := siem.NewSender(cfg.SIEM.Syslog.Address, tlsConfig, log)
		if err != nil {
			return nil, fmt.Errorf("siem.syslog.address: %w", err)
		}
		sender.Dropped = metrics.SIEMDropped
		d.add(service{"siem sender", func(ctx context.Context) error { sender.Run(ctx); return nil }})
		toSIEM = &siem.Service{Sender: sender, Format: cfg.SIEM.Syslog.Format, Version: o.Version, Community: signals, Log: log}
	}
	// The change feed's one fan-out: each page the follower reads goes to
	// the block lists (and Suricata rules), the community counts and the
	// SIEM, the published changes with their stored indicators.
	// Exposure: who already got a version a verification or a revision
	// refuses (docs/exposure.md).
	exposures := exposure.NewDetector(store, log)
	exposures.Pins, exposures.Feed, exposures.CatchUp = store, store, 24*time.Hour
	// A version is served until every daemon's index has the change (in
	// cache.freshness), and counted in the ledger's next second: looked
	// for again then.
	exposures.Settle = 2*cfg.Cache.Freshness + 3*time.Second
	if toSIEM != nil {
		exposures.Found = func(ev exposure.Event) { toSIEM.Exposure(ev.ThreatID, ev.Total, ev.Body, ev.At) }
	}
	d.add(service{"exposure", func(ctx context.Context) error { exposures.Run(ctx); return nil }})
	subscribers := []index.Subscriber{lists, signals, exposures}
	if toSIEM != nil {
		subscribers = append(subscribers, toSIEM)
	}
	follower := &index.Follower{Store: store, Index: idx, Principals: principals, Log: log, Subscribers: subscribers}
	// The follower runs from the start: token and user changes apply to the
	// principal cache while the index loads; threat changes once it is loaded.
	d.add(service{"change feed", func(ctx context.Context) error { follower.Run(ctx, poll); return nil }},
		service{"community signals", func(ctx context.Context) error { signals.Run(ctx, poll); return nil }})
	metrics.Watch(idx, follower.Lag)
	// The index's load, then the block lists' first read: the spill's fill
	// when there is a spill (it reads every verified report anyway; the
	// lists take the reports from the same reads), else a read of their
	// own (both read every verified report: one after the other, checks
	// answer sooner). A load that fails stops the daemon.
	var loaded atomic.Int64 // when the index was loaded (unix ns)
	d.add(service{"index load", func(ctx context.Context) error {
		started := time.Now()
		// The community signals are read first: every answer carries
		// them (confidence, sightings, campaigns), and checks answer only
		// once the index is loaded, so none shows the base confidence of
		// a view not read yet. A failure is logged; the view's own loop
		// tries again.
		if err := signals.Catch(ctx); err != nil && ctx.Err() == nil {
			log.Warn("community signals: the first read failed; answers show them once it succeeds", "error", err.Error())
		}
		if err := idx.Load(ctx); err != nil {
			if ctx.Err() == nil {
				return fmt.Errorf("loading the index of verified reports: %w", err)
			}
			return nil
		}
		log.Info("index loaded", "verified_reports", idx.Len(), "seq", idx.LastSeq(), "took_ms", time.Since(started).Milliseconds())
		loaded.Store(time.Now().UnixNano())
		if !cfg.Cache.Spill {
			fillLists(ctx, lists, log)
		}
		return nil
	}})
	if cfg.Cache.Spill {
		d.add(service{"index spill", func(ctx context.Context) error {
			idx.FillSpill(ctx, spillFillsLists(ctx, idx, spillHooks(log), lists, &loaded, log))
			return nil
		}})
	}

	usage := feed.NewUsage(store)
	tokenUse := core.NewTokenUse(store)
	d.add(service{"usage flush", func(ctx context.Context) error {
		flushUsage(ctx, usage, tokenUse, log)
		return nil
	}})

	var shared, hourly ratelimit.Taker
	if cfg.Limits.Store == "storage" {
		syncCounts := func(ctx context.Context, window int64, deltas map[string]int64) (map[string]int64, error) {
			return store.SyncRateCounts(ctx, core.RateCounts{Window: window, Counts: deltas})
		}
		hl := ratelimit.NewShared(time.Hour, syncCounts)
		sl := ratelimit.NewShared(time.Minute, syncCounts)
		d.add(service{"hourly limits", func(ctx context.Context) error { hl.Run(ctx, cfg.Limits.SyncInterval, log); return nil }},
			service{"minute limits", func(ctx context.Context) error { sl.Run(ctx, cfg.Limits.SyncInterval, log); return nil }})
		hourly, shared = hl, sl
		log.Info("rate limits shared through storage", "sync_interval", cfg.Limits.SyncInterval.String())
	}

	dispatcher := webhookDispatcher(cfg, store, log, metrics, signals, o.Version)
	d.add(service{"sources", func(ctx context.Context) error { runSources(ctx, cfg, store, log, metrics); return nil }},
		service{"webhooks", func(ctx context.Context) error { dispatcher.Run(ctx); return nil }})

	// Exporter plugins: the configured ones start in the background (the API
	// serves at once); a missing one makes only its endpoints answer 503.
	exportRoutes, exporterNames, err := exportRoutes(cfg)
	if err != nil {
		return nil, err
	}
	pool := plugins.NewExporters(&plugins.Host{Dir: cfg.Plugins.Dir, Log: log, Restarted: metrics.PluginRestarted})
	d.closers = append(d.closers, pool.Close)
	pool.Start(exporterNames)
	exporters := enabledExporters{pool: pool, enabled: exporterNames}

	var proxies []netip.Prefix
	for _, p := range cfg.Server.TrustedProxies {
		pfx, _ := config.ParsePrefix(p) // validated by config.Load
		proxies = append(proxies, pfx)
	}
	latest := index.NewLatest(idx, store)
	fw, err := firewallOptions(cfg, idx, log, filepath.Join(cfg.DataDir, "firewall-cache"))
	if err != nil {
		return nil, err
	}
	// The daemon's own sightings (firewall blocks, scan findings), counted
	// and written in batches; people's, stored in group commits, this
	// daemon's answers counting a batch as soon as it is stored (the
	// others at their next look).
	seen := community.NewSeen(ctx, store, log)
	var sightingLimiter ratelimit.Taker
	if hourly != nil {
		sightingLimiter = ratelimit.Prefixed(hourly, "sightings:")
	}
	// The writer outlives ctx: requests still draining at shutdown are stored.
	people := community.StartSightings(context.WithoutCancel(ctx), community.SightingsOptions{
		Store: store, DisputeVotes: cfg.Community.DisputeVotes, Limiter: sightingLimiter,
		PerHour: map[core.Tier]int{core.TierFree: cfg.Limits.SightingsPerHour.Free, core.TierPaid: cfg.Limits.SightingsPerHour.Paid},
		Find: func(ctx context.Context, q core.CheckQuery) (string, error) {
			res, err := idx.CheckQuery(ctx, q)
			if err != nil || res.Count == 0 {
				return "", err
			}
			return res.ID.String(), nil
		},
		Stored: func(ctx context.Context, ids []string) {
			for chunk := range slices.Chunk(ids, core.MaxGetThreats) {
				if err := signals.Refresh(ctx, chunk...); err != nil {
					log.Warn("community signals: reading the counts of new sightings failed; they show at the next look", "error", err.Error())
					return
				}
			}
		},
	})
	d.closers = append(d.closers, func() { seen.Wait(10 * time.Second) })
	var (
		recent  *firewall.Recent
		waivers *firewall.WaiverCache
		an      *analyses
	)
	if fw != nil {
		fw.Policy.SetCommunity(signals) // refusals name the reports' campaigns
		fw.Recorder = firewall.NewRecorder(ctx, store, cfg.Firewall.DecisionsKeep, log)
		fw.Recorder.Seen = seen
		fw.Recorder.Counted = metrics.FirewallDecision
		fw.Recorder.Dropped = metrics.FirewallDecisionDropped
		if toSIEM != nil {
			fw.Recorder.Sink = toSIEM.Decision
		}
		d.closers = append(d.closers, func() { fw.Recorder.Wait(10 * time.Second) })
		// The ledger of what the firewall serves, written once a second.
		if cfg.Firewall.Ledger {
			fw.Ledger = firewall.NewLedger(ctx, store, cfg.Firewall.LedgerIP, cfg.Firewall.LedgerKeep, log)
			d.closers = append(d.closers, func() { fw.Ledger.Wait(10 * time.Second) })
		}
		fw.Waivers = firewall.NewWaiverCache(ctx, store, cfg.Cache.Freshness, log)
		recent, waivers = fw.Recent, fw.Waivers
		// Package analysis of what the firewall fetches.
		if an = startAnalysis(cfg, store, log, metrics, fw, &d.closers); an != nil {
			an.service.Reported = func(k analysis.Key, reportID string) { exposures.Suspicious(k.Ecosystem, k.Name, k.Version, reportID) }
			d.add(an.services()...)
		}
	}
	var (
		mount    func(*echo.Echo)
		notFound func(*echo.Context) error
	)
	if cfg.Web.Enabled {
		site, err := web.New(ctx, web.Options{
			Signup: cfg.Web.Signup, SessionTTL: cfg.Web.SessionTTL,
			LoginAttempts: cfg.Web.LoginAttempts, LoginAttemptsIP: cfg.Web.LoginAttemptsPerIP, LoginWindow: cfg.Web.LoginWindow,
			BasePath: cfg.Server.BasePath, MaxBodyBytes: cfg.Server.MaxBodyBytes, FirewallBlocks: recent, FirewallWaivers: waivers, WebhooksAllowPrivate: cfg.Webhooks.AllowPrivate,
			Community: signals, Suggestions: suggestions,
		}, log, store, core.NewReports(store, limits(cfg)), idx, latest, func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return follower.Sync(ctx)
		})
		if err != nil {
			return nil, err
		}
		mount, notFound = site.Mount, site.NotFoundPage
	}
	d.Handler = api.New(api.Options{
		BasePath:          cfg.Server.BasePath,
		MaxBodyBytes:      cfg.Server.MaxBodyBytes,
		TrustedProxies:    proxies,
		PerIPPerMinute:    cfg.Limits.PerIPPerMinute,
		PerTokenPerMinute: map[core.Tier]int{core.TierFree: cfg.Limits.PerTokenPerMinute.Free, core.TierPaid: cfg.Limits.PerTokenPerMinute.Paid},
		Limits:            limits(cfg),
		BatchMax:          cfg.Limits.BatchMax,
		ScanMaxBytes:      int64(cfg.Scan.MaxBytes),
		Feed:              feed.Limits{MaxWindow: cfg.Limits.FeedMaxWindow, PageMax: cfg.Limits.FeedPageMax},
		LatestCount:       cfg.Limits.LatestCount,
		Limiter:           shared,
		ExportRoutes:      exportRoutes,
		StorageName:       cfg.Storage.Plugin,
		Version:           o.Version,
		AccessLog:         accessLog(cfg.Log),
		Metrics:           metrics,
		TokenUse:          tokenUse,
		Mount:             mount,
		NotFoundPage:      notFound,
		Firewall:          fw,
		Analysis:          analysisQueue(an),
		Seen:              seen,
		Community:         signals,
		Blocklists:        lists,
		Suggestions:       suggestions,
		Sightings:         people,
		MISP: &misp.Service{Store: store, Exporters: exporters, Name: "threatd", Site: LocalSite(cfg), HashDir: filepath.Join(cfg.DataDir, "cache", "misp-hashes"),
			Community: signals},
	}, log, store, idx, principals, usage, exporters)
	if fw != nil && fw.OCI != nil {
		d.OCI = fw.OCI.Handler
	}
	return d, nil
}
