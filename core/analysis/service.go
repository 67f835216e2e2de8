package analysis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/threatd/threatd/core"
)

// Fetcher downloads a version's archive, and its previous version's (the
// highest lower version by the registry's ordering; nil when none), into
// dir: the firewall's upstreams in the daemon.
type Fetcher interface {
	Fetch(ctx context.Context, k Key, dir string) (cur Target, prev *Target, err error)
}

// Reporter files the pending report of a suspicious version and returns
// its id (the id of the package's live report when there is one already).
type Reporter interface {
	Report(ctx context.Context, k Key, r Result) (string, error)
}

// Service analyses the queued versions in the background: Workers at a
// time, each claimed under a lease (Store.ClaimAnalyses), so that every
// daemon of one database analyses a version once.
type Service struct {
	Store     Store
	Fetcher   Fetcher
	Analyzers []Named
	Reporter  Reporter
	// Holder names this daemon in the leases.
	Holder  string
	Workers int
	Limits  Limits
	// Settings are passed to the analyzers (rules_dir).
	Settings  map[string]string
	Threshold Severity
	// Timeout bounds one analysis, fetching included.
	Timeout time.Duration
	// Poll is how often the queue is read when nothing wakes the service.
	Poll time.Duration
	Log  *slog.Logger
	// Finished is called after each analysis (metrics, the firewall's
	// holds); nil: nothing.
	Finished func(k Key, r Result, took time.Duration)
	// Reported is called with the report a suspicious version got (who
	// already has it: exposure); nil: nothing.
	Reported func(k Key, reportID string)

	wake chan struct{}
	once sync.Once
}

func (s *Service) init() {
	s.once.Do(func() { s.wake = make(chan struct{}, 1) })
}

// Wake makes the service read the queue now (a job was queued here).
func (s *Service) Wake() {
	s.init()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run claims and analyses queued versions until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	s.init()
	workers := max(s.Workers, 1)
	free := make(chan struct{}, workers)
	for range workers {
		free <- struct{}{}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ttl := 2*s.Timeout + time.Minute
	for {
		n := len(free)
		var jobs []Job
		if n > 0 {
			var err error
			jobs, err = s.Store.ClaimAnalyses(ctx, Claim{Holder: s.Holder, Now: time.Now().UTC(), TTL: ttl, Limit: n})
			if err != nil && ctx.Err() == nil {
				s.Log.Warn("analysis: claiming queued versions failed", "err", err)
			}
		}
		for _, j := range jobs {
			<-free
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { free <- struct{}{} }()
				s.analyse(ctx, j)
				s.Wake() // a worker is free again
			}()
		}
		if len(jobs) > 0 && len(jobs) == n {
			continue // there may be more; claim as workers free up
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-time.After(s.Poll):
		}
	}
}

// analyse runs one claimed job to its end and stores the outcome.
func (s *Service) analyse(ctx context.Context, j Job) {
	start := time.Now()
	k := j.Key()
	r, digest := s.run(ctx, k)
	if ctx.Err() != nil {
		return // stopping: the lease expires and another claim runs it
	}
	rec, err := s.Store.FinishAnalysis(ctx, Outcome{Key: k, Holder: s.Holder, Digest: digest, Result: r, At: time.Now().UTC()})
	if err != nil {
		if !errors.Is(err, core.ErrConflict) {
			s.Log.Warn("analysis: storing the result failed", "purl", k.Purl(), "err", err)
		}
		return
	}
	if r.Verdict == VerdictSuspicious && rec.ReportID == "" && s.Reporter != nil {
		id, err := s.Reporter.Report(ctx, k, r)
		if err == nil {
			err = s.Store.LinkAnalysisReport(ctx, ReportLink{Key: k, ReportID: id})
		}
		if err == nil && s.Reported != nil {
			s.Reported(k, id)
		}
		if err != nil {
			s.Log.Warn("analysis: filing the report of a suspicious version failed", "purl", k.Purl(), "err", err)
		}
	}
	s.Log.Info("analysis", "purl", k.Purl(), "verdict", r.Verdict, "score", r.Score, "findings", len(r.Findings), "reason", r.Reason, "took_ms", time.Since(start).Milliseconds())
	if s.Finished != nil {
		s.Finished(k, r, time.Since(start))
	}
}

// run fetches and analyses one version within the timeout: a failure to
// fetch or read is the verdict error with its reason.
func (s *Service) run(ctx context.Context, k Key) (Result, string) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	names := make([]string, len(s.Analyzers))
	for i, a := range s.Analyzers {
		names[i] = a.Name
	}
	fail := func(reason string) (Result, string) {
		if ctx.Err() == context.DeadlineExceeded {
			reason = fmt.Sprintf("over analysis.timeout (%s): %s", s.Timeout, reason)
		}
		return Result{Verdict: VerdictError, Reason: reason, Findings: []Finding{}, Analyzers: names}, ""
	}
	dir, err := os.MkdirTemp("", "threatd-analysis-")
	if err != nil {
		return fail("a work directory: " + err.Error())
	}
	defer os.RemoveAll(dir)
	cur, prev, err := s.Fetcher.Fetch(ctx, k, dir)
	if err != nil {
		return fail("fetching the archive: " + err.Error())
	}
	r, err := Run(ctx, s.Analyzers, Request{Target: cur, Previous: prev, Limits: s.Limits, Settings: s.Settings, Threshold: s.Threshold})
	if err != nil {
		return fail(err.Error())
	}
	return r, cur.Digest
}
