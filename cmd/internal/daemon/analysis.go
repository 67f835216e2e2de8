package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/core/api"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/proxy"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/plugins"
)

// holdsEvery is how often a daemon reads the analysis holds (and the
// queue's length): a verdict another daemon reached, or a review of an
// analysis report, reaches this daemon's firewall within it.
const holdsEvery = 2 * time.Second

// seenBound bounds the versions a daemon remembers having queued.
const seenBound = 200_000

// analyses is package analysis in the daemon (docs/analysis.md): the
// analyzer plugins, the background service that analyses the queue, the
// firewall's view of the holds, and the queueing of what it fetches.
type analyses struct {
	service *analysis.Service
	view    *firewall.Analyses
	store   port.Store
	log     *slog.Logger
	metrics *api.Metrics
	max     int

	mu   sync.Mutex
	seen map[analysis.Key]bool
}

// startAnalysis starts the analyzer plugins and makes the firewall queue
// and judge by analysis; nil (and a warning) when no analyzer starts: the
// firewall then runs without it.
func startAnalysis(cfg config.Config, store port.Store, log *slog.Logger, metrics *api.Metrics, fw *proxy.Options, closers *[]func()) *analyses {
	host := &plugins.Host{Dir: cfg.Plugins.Dir, Log: log, Restarted: metrics.PluginRestarted}
	var named []analysis.Named
	for _, name := range cfg.Analysis.Analyzers {
		a := &plugins.RestartingAnalyzer{Host: host, Name: name}
		if err := a.Start(); err != nil {
			log.Warn("package analysis is off: an analyzer plugin did not start", "analyzer", name, "error", err.Error())
			for _, n := range named {
				n.Analyzer.(*plugins.RestartingAnalyzer).Close()
			}
			return nil
		}
		named = append(named, analysis.Named{Name: name, Analyzer: a})
	}
	*closers = append(*closers, func() {
		for _, n := range named {
			n.Analyzer.(*plugins.RestartingAnalyzer).Close()
		}
	})
	threshold, _ := analysis.ParseSeverity(cfg.Analysis.ReportSeverity) // validated
	fetcher := archiveFetcher(*fw, log, int64(cfg.Analysis.MaxArchiveBytes))
	a := &analyses{view: firewall.NewAnalyses(), store: store, log: log, metrics: metrics, max: cfg.Analysis.MaxQueued, seen: map[analysis.Key]bool{}}
	settings := cfg.AnalysisSettings()
	a.service = &analysis.Service{
		Store: store, Fetcher: fetcher, Analyzers: named,
		Reporter: reporter{store: store, reports: core.NewReports(store, core.Limits{})},
		Holder:   holderName(), Workers: cfg.AnalysisWorkers(), Limits: cfg.AnalysisLimits(), Settings: settings,
		Threshold: threshold, Timeout: cfg.Analysis.Timeout, Poll: holdsEvery, Log: log,
		Finished: func(k analysis.Key, r analysis.Result, took time.Duration) {
			metrics.AnalysisDone(k.Ecosystem, r.Verdict, took)
		},
	}
	a.view.Queue = a.queue
	fw.Policy.SetAnalyses(a.view)
	return a
}

// holderName names this daemon in the queue's leases.
func holderName() string {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}

// queue queues a version the firewall saw, once per daemon; it says
// whether the store took it as new.
func (a *analyses) queue(k analysis.Key) bool {
	a.mu.Lock()
	if a.seen[k] {
		a.mu.Unlock()
		return false
	}
	if len(a.seen) >= seenBound {
		clear(a.seen)
	}
	a.seen[k] = true
	a.mu.Unlock()
	res, err := a.put(k)
	if err != nil {
		// A busy store (a writer held past the timeout): tried again in
		// the background, not only when the version is next fetched,
		// which a client that got it may never do.
		a.log.Warn("analysis: queueing a version failed; trying again", "purl", k.Purl(), "error", err.Error())
		go a.retry(k)
		return false
	}
	return a.queued(k, res)
}

// put asks the store to queue one version, within 5 s.
func (a *analyses) put(k analysis.Key) (analysis.QueueResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return a.store.QueueAnalyses(ctx, analysis.QueueRequest{Jobs: []analysis.Job{{Ecosystem: k.Ecosystem, Name: k.Name, Version: k.Version}}, MaxQueued: a.max})
}

// retry queues a version whose queueing failed: after 1, 2, 4, 8, 16
// and 32 s; then it is left to its next fetch.
func (a *analyses) retry(k analysis.Key) {
	for wait := time.Second; wait <= 32*time.Second; wait *= 2 {
		time.Sleep(wait)
		res, err := a.put(k)
		if err == nil {
			a.queued(k, res)
			return
		}
	}
	a.mu.Lock()
	delete(a.seen, k) // tried again when next seen
	a.mu.Unlock()
	a.log.Warn("analysis: queueing a version failed for a minute; it is queued when next fetched", "purl", k.Purl())
}

// queued reads the store's answer to a queueing.
func (a *analyses) queued(k analysis.Key, res analysis.QueueResult) bool {
	if res.Full > 0 {
		a.metrics.AnalysisQueueFull(res.Full)
		a.log.Warn("analysis: the queue is full (analysis.max_queued); a version is not analysed", "purl", k.Purl(), "max_queued", a.max)
	}
	if res.Queued > 0 {
		a.service.Wake()
		return true
	}
	return false
}

// Request queues a version again (POST /analysis).
func (a *analyses) Request(ctx context.Context, k analysis.Key, by string) error {
	res, err := a.store.QueueAnalyses(ctx, analysis.QueueRequest{Jobs: []analysis.Job{{Ecosystem: k.Ecosystem, Name: k.Name, Version: k.Version, RequestedBy: by}}, Force: true, MaxQueued: a.max})
	if err != nil {
		return err
	}
	if res.Full > 0 {
		a.metrics.AnalysisQueueFull(res.Full)
		return fmt.Errorf("%w: the analysis queue holds analysis.max_queued (%d) unfinished analyses; try again later", core.ErrLimit, a.max)
	}
	a.service.Wake()
	return nil
}

// watch reads the holds and the queue's length every holdsEvery.
func (a *analyses) watch(ctx context.Context) {
	for {
		if holds, err := a.store.AnalysisHolds(ctx, analysis.HoldQuery{Limit: analysis.MaxHolds}); err == nil {
			a.view.Set(holds)
		} else if ctx.Err() == nil {
			a.log.Warn("analysis: reading the holds failed; will retry", "error", err.Error())
		}
		if q, err := a.store.AnalysisQueue(ctx); err == nil {
			a.metrics.AnalysisQueue(q.Queued, q.Running)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(holdsEvery):
		}
	}
}

// services are the analysis service and the holds' reader.
func (a *analyses) services() []service {
	return []service{
		{"analysis", a.service.Run},
		{"analysis holds", func(ctx context.Context) error { a.watch(ctx); return nil }},
	}
}

// archives fetches through the firewall (analysis.Fetcher).
type archives struct {
	proxy *proxy.Proxy
	limit int64
}

// archiveFetcher fetches as the firewall of fw does (its cache, upstreams
// and origins), on an instance of the proxy that serves nothing.
func archiveFetcher(fw proxy.Options, log *slog.Logger, limit int64) archives {
	fw.OCI = nil
	return archives{proxy.New(fw, proxy.Host{Log: log}), limit}
}

// ArchiveFetcher is what threatd analyze PURL fetches with: the
// firewall's fetching as cfg configures it (whether or not the firewall
// is on), its cache in cacheDir.
func ArchiveFetcher(cfg config.Config, log *slog.Logger, cacheDir string) (analysis.Fetcher, error) {
	cfg.Firewall.Enabled = true
	fw, err := firewallOptions(cfg, nil, log, cacheDir)
	if err != nil {
		return nil, err
	}
	return archiveFetcher(*fw, log, int64(cfg.Analysis.MaxArchiveBytes)), nil
}

func (f archives) Fetch(ctx context.Context, k analysis.Key, dir string) (analysis.Target, *analysis.Target, error) {
	return f.proxy.FetchArchives(ctx, k, dir, f.limit)
}

// reporter files a suspicious version's report as the source user
// analysis (analysis.Reporter).
type reporter struct {
	store   port.Store
	reports *core.Reports
}

func (r reporter) Report(ctx context.Context, k analysis.Key, res analysis.Result) (string, error) {
	u, err := core.SourceUser(ctx, r.store, analysis.Source)
	if err != nil {
		return "", err
	}
	t, err := r.reports.SubmitAutomatic(ctx, u, analysis.Submission(k, res))
	var dup *core.ConflictError
	if errors.As(err, &dup) && dup.Meta["id"] != "" {
		// The package has a live report already: it is the one a
		// reviewer decides by.
		return dup.Meta["id"], nil
	}
	return t.ID, err
}

// analysisQueue is an for the API (nil: analysis is off).
func analysisQueue(an *analyses) api.AnalysisQueue {
	if an == nil {
		return nil
	}
	return an
}
