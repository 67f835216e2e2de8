package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/api"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/plugins"
)

// runSources runs every configured source at start and then every interval,
// on one daemon at a time: a run needs the source's lease in the database,
// held for one interval, so daemons sharing a database take turns. It
// returns once ctx has ended and every run has stopped.
func runSources(ctx context.Context, cfg config.Config, store port.Store, log *slog.Logger, metrics *api.Metrics) {
	holder := leaseHolder()
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, src := range cfg.Sources {
		wg.Go(func() {
			for {
				runSourceOnce(ctx, cfg, store, log, src, holder, metrics)
				select {
				case <-ctx.Done():
					return
				case <-time.After(src.Interval):
				}
			}
		})
	}
}

// leaseHolder names this daemon in storage leases: host, process and a
// random part (a restarted process is a new holder).
func leaseHolder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
}

func runSourceOnce(ctx context.Context, cfg config.Config, store port.Store, log *slog.Logger, src config.Source, holder string, metrics *api.Metrics) {
	l := log.With("source", src.Name, "plugin", src.Plugin)
	held, err := store.Lease(ctx, core.LeaseClaim{Name: "source:" + src.Name, Holder: holder, TTL: src.Interval})
	if err != nil {
		l.Warn("source: lease failed; skipping this run", "error", err.Error())
		return
	}
	if !held {
		l.Info("source: another daemon holds the lease; not running")
		return
	}
	plugin, err := (&plugins.Host{Dir: cfg.Plugins.Dir, Log: log, CacheDir: cfg.PluginCacheDir()}).StartSource(src.Plugin)
	if err != nil {
		l.Error("source: cannot start plugin", "error", err.Error())
		metrics.SourceRun(src.Name, nil, err)
		return
	}
	defer plugin.Close()
	start := time.Now()
	sum, err := core.Ingest(ctx, store, plugin, src.Plugin, src.Paths, core.ImportOptions{Settings: cfg.Import.Settings(), Full: src.Full, Trust: src.Trust}, nil)
	metrics.SourceRun(src.Name, sum.Counts, err)
	if err != nil {
		l.Error("source run failed", "error", err.Error())
		return
	}
	attrs := []any{"took_ms", time.Since(start).Milliseconds()}
	for k, v := range sum.Counts {
		attrs = append(attrs, k, v)
	}
	l.Info("source run", attrs...)
	for _, s := range sum.Skipped {
		l.Warn("source: skipped", "what", s)
	}
	if sum.FullRefused != "" {
		l.Warn("source: " + sum.FullRefused)
	}
}
