// Package storage is threatd's SQL storage, one bun implementation for both
// SQLite and PostgreSQL. It implements port.Store; the storage plugins in
// cmd/threatd-storage-* serve it over the plugin protocol.
package storage

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/port"
)

// Store is a port.Store on a SQL database.
type Store struct {
	db      *bun.DB
	dialect Dialect
	opts    Options
	now     func() time.Time
	get     getStmt
	getFull getStmt
	// writer is held by this process's SQLite write transaction (a
	// one-slot semaphore, so that waiting respects the context).
	writer chan struct{}
	// growth: PostgreSQL's statistics kept current during imports (analyze.go).
	growth growth
	// queue holds the SQLite writes waiting for a group transaction.
	queue writeQueue
	// SQLite: the background WAL checkpoints (see openSQLite).
	stopCheckpoints context.CancelFunc
	checkpointsDone chan struct{}
	// corrupt: a query found the database damaged (integrity.go).
	corrupt *corruption
	// hooks: the query hooks, installed once at Open (integrity.go).
	hooks queryHooks
}

// writeTurn waits for this process's turn to write on SQLite. SQLite has
// one writer at a time; without the turn, the pool's connections all ran
// BEGIN IMMEDIATE and the losers slept in SQLite's busy handler (up to
// 100 ms a try, in no order): submissions under load waited up to 1.9 s
// behind a lock free most of the time. Other processes on the same file
// (the CLI during an import) still meet busy_timeout.
func (s *Store) writeTurn(ctx context.Context) (func(), error) {
	if s.writer == nil {
		return func() {}, nil
	}
	select {
	case s.writer <- struct{}{}:
		return func() { <-s.writer }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// checkpointEvery is checkpointLoop's interval (shorter in tests).
var checkpointEvery = time.Second

// checkpointLoop copies the SQLite WAL into the database every interval
// (PASSIVE: it never waits for or blocks readers and writers), so that
// commits do not; a final checkpoint runs at Close.
//
// With Options.IntegrityEvery set (a daemon's store), a goroutine beside it runs
// SQLite's quick_check at once and then at that interval, so that damage in
// pages no request has read yet is found and reported (Health: degraded)
// rather than discovered by the first unlucky query. The check runs at the
// lowest CPU priority (inBackground): it reads the whole database, and
// requests come first.
func (s *Store) checkpointLoop(ctx context.Context, every time.Duration) {
	defer close(s.checkpointsDone)
	if s.opts.IntegrityEvery > 0 {
		// On its own goroutine, so that checkpoints go on while a check
		// that yields the CPU to requests takes its time.
		var checks sync.WaitGroup
		defer checks.Wait()
		checks.Go(func() {
			s.quickCheck(ctx)
			it := time.NewTicker(s.opts.IntegrityEvery)
			defer it.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-it.C:
					s.quickCheck(ctx)
				}
			}
		})
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.checkpoint(ctx)
		}
	}
}

// walRestartFrames is the WAL size, in pages, past which checkpoint makes
// sure the next write restarts the WAL (var: tests shrink it).
var walRestartFrames = 16384 // 64 MiB of 4 KiB pages

// checkpoint copies the WAL into the database (PASSIVE). SQLite writes
// the WAL from its start again only when a write transaction begins with
// every frame copied; writes that follow each other without a pause (an
// import) never leave such a moment, so the WAL grew for as long as they
// went on: 10 GB beside a 2.7 GB database during an import of a million
// reports. Once the WAL holds walRestartFrames, the checkpoint is repeated
// in the writer turn: it copies the few frames written since, with no
// write running, and the next write restarts the WAL.
func (s *Store) checkpoint(ctx context.Context) {
	var busy, frames, copied int
	if err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil || frames < walRestartFrames {
		return
	}
	release, err := s.writeTurn(ctx)
	if err != nil {
		return
	}
	defer release()
	_, _ = s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
}

// bunDB is a database or a transaction.
type bunDB = bun.IDB

// Options are backend options from storage.settings.
type Options struct {
	// CreateEmpty lets a 0-byte SQLite file become a new database (threatd
	// migrate); otherwise Open refuses it. A missing file is always created.
	CreateEmpty bool
	// IntegrityEvery runs SQLite's quick_check at open and then at this
	// interval (0 or negative: never). storage.settings.integrity_check
	// sets it ("off": negative); the SQLite plugin gives a daemon's store
	// six hours when the setting does not say.
	IntegrityEvery time.Duration

	// CheckProcess, when set, runs the integrity check of the database
	// at path somewhere else and returns what QuickCheck returns there: the
	// SQLite plugin runs it in a child process at the lowest priority
	// (ErrCheckHere: run it here, on a thread at that priority).
	// (In this process a thread at the lowest priority still held one of
	// the Go runtime's processors, and every collection waited for it to
	// stop: the index spill's fill at start-up took a third longer beside
	// it, docs/performance.md.)
	CheckProcess func(ctx context.Context, path string) ([]string, error)

	// FailStep makes the named submission step fail (core.StepLookup,
	// StepInsertThreat, StepInsertDetails). For tests only: it is refused
	// unless the plugin's environment has THREATD_TEST_FAULTS=1.
	FailStep string
}

// TestFaultsEnv must be "1" for Options.FailStep to be accepted.
const TestFaultsEnv = "THREATD_TEST_FAULTS"

// OptionsFromSettings reads Options from storage.settings. Unknown settings
// are refused so that a typo never passes silently.
func OptionsFromSettings(settings map[string]string, getenv func(string) string) (Options, error) {
	var o Options
	for k, v := range settings {
		switch k {
		case "test_fail_step":
			if getenv(TestFaultsEnv) != "1" {
				return o, fmt.Errorf("storage.settings.test_fail_step is a test-only fault injection and needs %s=1 in the environment", TestFaultsEnv)
			}
			switch v {
			case core.StepLookup, core.StepInsertThreat, core.StepInsertDetails:
				o.FailStep = v
			default:
				return o, fmt.Errorf("storage.settings.test_fail_step: unknown step %q", v)
			}
		case "integrity_check":
			// How often a daemon runs SQLite's quick_check: a duration of
			// at least 1m, or "off".
			if v == "off" {
				o.IntegrityEvery = -1
				continue
			}
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Minute {
				return o, fmt.Errorf(`storage.settings.integrity_check: must be a duration of at least 1m, or "off" (got %q)`, v)
			}
			o.IntegrityEvery = d
		default:
			return o, fmt.Errorf("storage.settings.%s: unknown setting", k)
		}
	}
	return o, nil
}

// Open connects to the database of dialect d at dsn (a file path for SQLite).
func Open(d Dialect, dsn string, opts Options) (*Store, error) {
	var (
		db  *bun.DB
		err error
	)
	switch d {
	case SQLite:
		if err := checkSQLiteFile(context.Background(), dsn, opts.CreateEmpty); err != nil {
			return nil, err
		}
		db, err = openSQLite(dsn)
	case Postgres:
		db, err = openPostgres(dsn)
	default:
		return nil, fmt.Errorf("storage: unsupported dialect %q", d)
	}
	if err == nil {
		if err = optionalDetails(db); err != nil {
			db.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	location := dsn
	if d == Postgres {
		location = "the PostgreSQL database of storage.dsn"
	}
	s := &Store{dialect: d, opts: opts, now: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
		corrupt: &corruption{location: location}}
	s.hooks.add(corruptionHook{s.corrupt})
	s.db = db.WithQueryHook(&s.hooks)
	if d == SQLite {
		s.writer = make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(context.Background())
		s.stopCheckpoints = cancel
		s.checkpointsDone = make(chan struct{})
		go s.checkpointLoop(ctx, checkpointEvery)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	if s.stopCheckpoints != nil {
		s.stopCheckpoints()
		<-s.checkpointsDone
		_, _ = s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	}
	if s.getFull.stmt != nil {
		_ = s.getFull.stmt.Close()
	}
	if s.get.stmt != nil {
		_ = s.get.stmt.Close()
	}
	return s.db.Close()
}

// Health pings the database, and reports damage any query has found.
func (s *Store) Health(ctx context.Context) error {
	if err := s.corrupt.err(); err != nil {
		return err
	}
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("%w: %v", core.ErrUnavailable, err)
	}
	return nil
}

// Stats counts rows.
func (s *Store) Stats(ctx context.Context) (core.Stats, error) {
	var st core.Stats
	err := s.db.NewRaw(`SELECT
		(SELECT count(*) FROM users) AS users,
		(SELECT count(*) FROM api_tokens) AS tokens,
		(SELECT count(*) FROM threats) AS threats,
		(SELECT coalesce(max(seq), 0) FROM changes) AS last_seq`).
		Scan(ctx, &st.Users, &st.Tokens, &st.Threats, &st.LastSeq)
	return st, err
}

var _ port.Store = (*Store)(nil)
