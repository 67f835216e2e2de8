package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/spf13/cobra"

	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/api"
	"github.com/threatd/threatd/core/blocklist"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/core/feed"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/misp"
	"github.com/threatd/threatd/core/ratelimit"
	"github.com/threatd/threatd/core/siem"
	"github.com/threatd/threatd/core/web"
	"github.com/threatd/threatd/plugins"
)

func serveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon (migrations are applied at start)",
		Args:  cobra.NoArgs,
		RunE:  serve,
	}
	cmd.Flags().String("listen", "", "listen address host:port (config server.listen)")
	cmd.Flags().String("tls-mode", "", "self-signed, files or off (config server.tls.mode)")
	return cmd
}

func serve(cmd *cobra.Command, _ []string) error {
	metrics := api.NewMetrics(version)
	e, err := openEnv(cmd, true, createMissing, metrics.PluginRestarted)
	if err != nil {
		return err
	}
	defer e.close()
	cfg, log := e.cfg, e.log
	ctx := cmd.Context()

	// The daemon's background services (services.go): each runs until
	// the HTTP server has drained, under one errgroup; one that fails stops
	// the daemon with its error.
	var services []service
	poll := max(cfg.Cache.Freshness/2, 10*time.Millisecond)

	// The hot read path: the index of verified reports loads in the
	// background while the API already answers (/healthz says "starting",
	// checks answer 503 until it is loaded); then the follower applies the
	// change feed so that changes by any process show within cache.freshness.
	idx := index.New(e.store, e.cfg.Cache.Records)
	if cfg.Cache.Spill {
		if err := idx.EnableSpill(filepath.Join(cfg.DataDir, "cache")); err != nil {
			return fmt.Errorf("cache.spill: %w (cache.spill: false runs without it)", err)
		}
		defer idx.CloseSpill()
	}
	principals := index.NewPrincipals(core.NewAccounts(e.store), cfg.Cache.Freshness)
	// The community signals every record carries (sighting counts,
	// disputes, submitters' records, campaigns), read as often as the
	// change feed, whose review decisions move submitters' records.
	signals := community.New(e.store, log)
	// Campaign suggestions, shared by the API and the web site.
	suggestions := &community.Suggestions{}
	// The block lists: every verified report read once in the background,
	// then each report the change feed brings.
	lists := blocklist.NewService(e.store, cfg.Blocklists.RPZZone)
	lists.SetSIDBase(cfg.Blocklists.SuricataSIDBase)
	// The SIEM's syslog messages (siem.syslog.address): firewall decisions
	// and the change feed's verifications, revisions and withdrawals.
	var toSIEM *siem.Service
	if cfg.SIEM.Syslog.Address != "" {
		tlsConfig, err := siemTLS(cfg.SIEM.Syslog.CAFile)
		if err != nil {
			return err
		}
		sender, err := siem.NewSender(cfg.SIEM.Syslog.Address, tlsConfig, log)
		if err != nil {
			return fmt.Errorf("siem.syslog.address: %w", err)
		}
		sender.Dropped = metrics.SIEMDropped
		services = append(services, service{"siem sender", func(ctx context.Context) error { sender.Run(ctx); return nil }})
		toSIEM = &siem.Service{Sender: sender, Format: cfg.SIEM.Syslog.Format, Version: version, Community: signals, Log: log}
	}
	// The change feed's one fan-out: each page the follower reads goes to
	// the block lists (and Suricata rules), the community counts and the
	// SIEM, the published changes with their stored indicators.
	subscribers := []index.Subscriber{lists, signals}
	if toSIEM != nil {
		subscribers = append(subscribers, toSIEM)
	}
	follower := &index.Follower{Store: e.store, Index: idx, Principals: principals, Log: log, Subscribers: subscribers}
	// The follower runs from the start: token and user changes apply to the
	// principal cache while the index loads; threat changes once it is loaded.
	services = append(services,
		service{"change feed", func(ctx context.Context) error { follower.Run(ctx, poll); return nil }},
		service{"community signals", func(ctx context.Context) error { signals.Run(ctx, poll); return nil }})
	metrics.Watch(idx, follower.Lag)
	if cfg.Metrics.Listen != "" {
		stop, err := serveMetrics(cfg.Metrics.Listen, metrics, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	// The index's load, then the block lists' first read (both read every
	// verified report: one after the other, checks answer sooner). A load
	// that fails stops the daemon.
	services = append(services, service{"index load", func(ctx context.Context) error {
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
		fillLists(ctx, lists, log)
		return nil
	}})
	if cfg.Cache.Spill {
		services = append(services, service{"index spill", func(ctx context.Context) error {
			idx.FillSpill(ctx, spillHooks(log))
			return nil
		}})
	}

	usage := feed.NewUsage(e.store)
	tokenUse := core.NewTokenUse(e.store)
	services = append(services, service{"usage flush", func(ctx context.Context) error {
		flushUsage(ctx, usage, tokenUse, log)
		return nil
	}})

	var shared, hourly ratelimit.Taker
	if cfg.Limits.Store == "storage" {
		hl := ratelimit.NewShared(time.Hour, func(ctx context.Context, window int64, deltas map[string]int64) (map[string]int64, error) {
			return e.store.SyncRateCounts(ctx, core.RateCounts{Window: window, Counts: deltas})
		})
		services = append(services, service{"hourly limits", func(ctx context.Context) error { hl.Run(ctx, cfg.Limits.SyncInterval, log); return nil }})
		hourly = hl
		sl := ratelimit.NewShared(time.Minute, func(ctx context.Context, window int64, deltas map[string]int64) (map[string]int64, error) {
			return e.store.SyncRateCounts(ctx, core.RateCounts{Window: window, Counts: deltas})
		})
		services = append(services, service{"minute limits", func(ctx context.Context) error { sl.Run(ctx, cfg.Limits.SyncInterval, log); return nil }})
		shared = sl
		log.Info("rate limits shared through storage", "sync_interval", cfg.Limits.SyncInterval.String())
	}

	dispatcher := webhookDispatcher(cfg, e.store, log, metrics, signals)
	services = append(services,
		service{"sources", func(ctx context.Context) error { runSources(ctx, cfg, e.store, log, metrics); return nil }},
		service{"webhooks", func(ctx context.Context) error { dispatcher.Run(ctx); return nil }})

	// Exporter plugins: the configured ones start in the background (the API
	// serves at once); a missing one makes only its endpoints answer 503.
	exportRoutes, exporterNames, err := exportRoutes(cfg)
	if err != nil {
		return err
	}
	pool := plugins.NewExporters(&plugins.Host{Dir: cfg.Plugins.Dir, Log: log, Restarted: metrics.PluginRestarted})
	defer pool.Close()
	pool.Start(exporterNames)
	exporters := enabledExporters{pool: pool, enabled: exporterNames}

	var proxies []netip.Prefix
	for _, p := range cfg.Server.TrustedProxies {
		pfx, _ := config.ParsePrefix(p) // validated by config.Load
		proxies = append(proxies, pfx)
	}
	latest := index.NewLatest(idx, e.store)
	fw, err := firewallOptions(cfg, idx, log)
	if err != nil {
		return err
	}
	// The daemon's own sightings (firewall blocks, scan findings), counted
	// and written in batches; people's, stored in group commits, this
	// daemon's answers counting a batch as soon as it is stored (the
	// others at their next look).
	seen := community.NewSeen(ctx, e.store, log)
	var sightingLimiter ratelimit.Taker
	if hourly != nil {
		sightingLimiter = ratelimit.Prefixed(hourly, "sightings:")
	}
	// The writer outlives ctx: requests still draining at shutdown are stored.
	people := community.StartSightings(context.WithoutCancel(ctx), community.SightingsOptions{
		Store: e.store, DisputeVotes: cfg.Community.DisputeVotes, Limiter: sightingLimiter,
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
	defer seen.Wait(10 * time.Second)
	if fw != nil {
		fw.Policy.SetCommunity(signals) // refusals name the reports' campaigns
		fw.Recorder = firewall.NewRecorder(ctx, e.store, cfg.Firewall.DecisionsKeep, log)
		fw.Recorder.Seen = seen
		fw.Recorder.Counted = metrics.FirewallDecision
		fw.Recorder.Dropped = metrics.FirewallDecisionDropped
		if toSIEM != nil {
			fw.Recorder.Sink = toSIEM.Decision
		}
		defer fw.Recorder.Wait(10 * time.Second)
		fw.Waivers = firewall.NewWaiverCache(ctx, e.store, cfg.Cache.Freshness, log)
	}
	var (
		recent  *firewall.Recent
		waivers *firewall.WaiverCache
	)
	if fw != nil {
		recent, waivers = fw.Recent, fw.Waivers
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
		}, log, e.store, core.NewReports(e.store, limits(cfg)), idx, latest, func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return follower.Sync(ctx)
		})
		if err != nil {
			return err
		}
		mount, notFound = site.Mount, site.NotFoundPage
	}
	handler := api.New(api.Options{
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
		Version:           version,
		AccessLog:         accessLog(cfg.Log),
		Metrics:           metrics,
		TokenUse:          tokenUse,
		Mount:             mount,
		NotFoundPage:      notFound,
		Firewall:          fw,
		Seen:              seen,
		Community:         signals,
		Blocklists:        lists,
		Suggestions:       suggestions,
		Sightings:         people,
		MISP: &misp.Service{Store: e.store, Exporters: exporters, Name: "threatd", Site: localSite(cfg), HashDir: filepath.Join(cfg.DataDir, "cache", "misp-hashes"),
			Community: signals},
	}, log, e.store, idx, principals, usage, exporters)

	sc := echo.StartConfig{
		Address:         cfg.Server.Listen,
		HideBanner:      true,
		HidePort:        true,
		GracefulTimeout: 20 * time.Second,
		ListenerAddrFunc: func(addr net.Addr) {
			log.Info("threatd listening", "address", addr.String(), "tls", cfg.Server.TLS.Mode,
				"base_path", cfg.Server.BasePath, "storage", cfg.Storage.Plugin, "version", version)
		},
		BeforeServeFunc: func(s *http.Server) error {
			s.ReadHeaderTimeout = 10 * time.Second
			s.IdleTimeout = 120 * time.Second
			s.MaxHeaderBytes = api.ServerHeaderBytes // the API's own JSON 431 answers first
			s.ErrorLog = serverErrorLog(log)
			return nil
		},
	}
	certFile, keyFile := cfg.Server.TLS.CertFile, cfg.Server.TLS.KeyFile
	if cfg.Server.TLS.Mode != config.TLSOff && cfg.Server.TLS.Mode != config.TLSFiles {
		host, _, _ := net.SplitHostPort(cfg.Server.Listen)
		names := append([]string{host}, cfg.Server.TLS.Names...)
		// The machine's host name, when a certificate can name it: one it
		// could never cover would make a new certificate at every start.
		if h, err := os.Hostname(); err == nil && config.CertName(h) {
			names = append(names, h)
		}
		var created bool
		var cerr error
		certFile, keyFile, created, cerr = api.SelfSignedCert(filepath.Join(cfg.DataDir, "tls"), names)
		if cerr != nil {
			return fmt.Errorf("self-signed TLS certificate: %w", cerr)
		}
		if created {
			log.Info("generated a self-signed TLS certificate", "cert_file", certFile, "names", names)
		}
	}
	if fw != nil && fw.OCI != nil {
		stop, err := serveOCI(cfg, fw.OCI.Handler, certFile, keyFile, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	// The background services run until the HTTP server has drained (a
	// request still in flight may need them); one that fails stops it.
	bgCtx, stopServices := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServices()
	wait, failed := runServices(bgCtx, services)
	defer wait()
	ctx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	stopWhenFailed := context.AfterFunc(failed, stopServing)
	defer stopWhenFailed()
	switch cfg.Server.TLS.Mode {
	case config.TLSOff:
		log.Warn("TLS IS OFF: the API is served over plain HTTP and tokens cross the network in clear text; run this only behind a TLS-terminating proxy",
			"listen", cfg.Server.Listen)
		err = sc.Start(ctx, handler)
	case config.TLSFiles:
		err = startTLS(ctx, sc, handler, cfg.Server.TLS.CertFile, cfg.Server.TLS.KeyFile)
	default:
		err = startTLS(ctx, sc, handler, certFile, keyFile)
	}
	stopServices()
	if serr := wait(); serr != nil {
		return serr
	}
	if opErr := (*net.OpError)(nil); errors.As(err, &opErr) && opErr.Op == "listen" {
		return fmt.Errorf("server.listen %s: %w (choose another address with --listen, THREATD_SERVER__LISTEN or server.listen in the configuration file)",
			cfg.Server.Listen, opErr.Err)
	}
	if err != nil {
		return err
	}
	log.Info("threatd stopped: in-flight requests drained")
	return nil
}
