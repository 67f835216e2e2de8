package daemon

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/blocklist"
	"github.com/threatd/threatd/core/feed"
	"github.com/threatd/threatd/core/index"
)

// service is one of the daemon's background parts (serve): it runs until
// its context ends, and an error it returns stops the daemon.
type service struct {
	name string
	run  func(ctx context.Context) error
}

// runServices runs every service under one errgroup until ctx ends.
// failed ends when one fails; wait waits for all of them and returns the
// first failure (it may be called more than once).
func runServices(ctx context.Context, services []service) (wait func() error, failed context.Context) {
	g, gctx := errgroup.WithContext(ctx)
	failedCtx, fail := context.WithCancel(context.Background())
	for _, s := range services {
		g.Go(func() error {
			if err := s.run(gctx); err != nil {
				fail()
				return err
			}
			return nil
		})
	}
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = g.Wait(); fail() })
		return err
	}, failedCtx
}

// fillLists is the block lists' first read of every verified report,
// tried again every 5 s until it succeeds or ctx ends.
func fillLists(ctx context.Context, lists *blocklist.Service, log *slog.Logger) {
	started := time.Now()
	for {
		err := lists.Fill(ctx)
		if err == nil {
			domains, ips := lists.Len()
			log.Info("block lists built", "domains", domains, "addresses", ips, "took_ms", time.Since(started).Milliseconds())
			return
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("block lists: reading the verified reports failed; retrying in 5 s", "error", err.Error())
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// spillFillsLists makes the spill's fill build the block lists too: they
// take every batch it reads (Offer) and are complete when its first pass
// is. Should the fill be stuck (a full disk stops it at the batch it
// cannot write: idx.SpillFailure), the lists read the reports themselves
// (fillLists), once; a failed storage read is tried again by the fill, and
// a report that cannot be rendered is still offered.
func spillFillsLists(ctx context.Context, idx *index.Index, hooks index.SpillHooks, lists *blocklist.Service, loaded *atomic.Int64, log *slog.Logger) index.SpillHooks {
	var own sync.Once
	failed, filled := hooks.Failed, hooks.Filled
	hooks.Read = lists.Offer
	hooks.Failed = func(err error, retryIn time.Duration) {
		failed(err, retryIn)
		if idx.SpillFailure() != "" {
			own.Do(func() { go fillLists(ctx, lists, log) })
		}
	}
	hooks.Filled = func(st index.SpillStats) {
		filled(st)
		if done, _ := lists.Filled(); done {
			return // filled by their own read
		}
		lists.Complete()
		domains, ips := lists.Len()
		log.Info("block lists built", "domains", domains, "addresses", ips, "took_ms", time.Since(time.Unix(0, loaded.Load())).Milliseconds(),
			"read_with", "index spill")
	}
	return hooks
}

// spillHooks log the index spill's filling.
func spillHooks(log *slog.Logger) index.SpillHooks {
	return index.SpillHooks{
		Failed: func(err error, retryIn time.Duration) {
			log.Warn("index spill: filling it failed; will retry", "error", err.Error(), "retry_in", retryIn.String())
		},
		Recovered: func() { log.Info("index spill: writing its file again") },
		Filled: func(st index.SpillStats) {
			log.Info("index spill filled", "entries", st.Entries, "bytes", st.Live, "took_ms", st.FirstFillMillis)
		},
	}
}

// flushUsage writes the paid usage counts and the tokens' last-use times
// every 5 s, and once more when ctx ends (before the storage plugin
// stops: the daemon waits for its services first).
func flushUsage(ctx context.Context, usage *feed.Usage, tokenUse *core.TokenUse, log *slog.Logger) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := usage.Flush(context.WithoutCancel(ctx)); err != nil {
				log.Warn("paid usage: final flush failed", "error", err.Error())
			}
			if err := tokenUse.Flush(context.WithoutCancel(ctx)); err != nil {
				log.Warn("token last-use times: final flush failed", "error", err.Error())
			}
			return
		case <-t.C:
			if err := usage.Flush(ctx); err != nil {
				log.Warn("paid usage: flush failed; will retry", "error", err.Error())
			}
			if err := tokenUse.Flush(ctx); err != nil {
				log.Warn("token last-use times: flush failed; will retry", "error", err.Error())
			}
		}
	}
}
