package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/threatd/threatd/core"
)

// isCorrupt reports whether err says the database is damaged, or is not a
// database at all.
func isCorrupt(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff // the primary result code
		return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
	}
	var pe pgdriver.Error
	if errors.As(err, &pe) {
		c := pe.Field('C')
		return c == "XX001" || c == "XX002" // data_corrupted, index_corrupted
	}
	return false
}

// corruption remembers that a query found the database damaged: from then
// on Health reports it (healthz: degraded, "corrupt"), and the first finding
// and then one a minute are logged at error level.
type corruption struct {
	first    atomic.Pointer[string]
	lastLog  atomic.Int64
	location string // the file (SQLite) or the database (PostgreSQL)
}

func (c *corruption) note(err error) {
	if err == nil || !isCorrupt(err) {
		return
	}
	c.record(err.Error())
}

// record keeps msg as the damage found (the first finding is kept).
func (c *corruption) record(msg string) {
	c.first.CompareAndSwap(nil, &msg)
	now := time.Now().Unix()
	if last := c.lastLog.Load(); now-last >= 60 && c.lastLog.CompareAndSwap(last, now) {
		slog.Error("THE DATABASE IS DAMAGED: restore it from a backup; reads and writes that touch the damaged pages fail",
			"database", c.location, "error", msg)
	}
}

// err is the corruption found so far, as core.ErrCorrupt, or nil.
func (c *corruption) err() error {
	if p := c.first.Load(); p != nil {
		return fmt.Errorf("%w: %s: %s", core.ErrCorrupt, c.location, *p)
	}
	return nil
}

// queryHooks is the one bun query hook a Store installs, at Open: bun's
// hooks are fixed when the handle is made (WithQueryHook) and the
// checkpoint loop queries from the start, so later hooks (tests' query
// logs) are added here.
type queryHooks struct {
	mu    sync.RWMutex
	hooks []bun.QueryHook
}

func (q *queryHooks) add(h bun.QueryHook) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.hooks = append(q.hooks, h)
}

func (q *queryHooks) list() []bun.QueryHook {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.hooks
}

func (q *queryHooks) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	for _, h := range q.list() {
		ctx = h.BeforeQuery(ctx, e)
	}
	return ctx
}

func (q *queryHooks) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	for _, h := range q.list() {
		h.AfterQuery(ctx, e)
	}
}

// corruptionHook notes the corruption errors of every query bun runs.
type corruptionHook struct{ c *corruption }

func (h corruptionHook) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (h corruptionHook) AfterQuery(_ context.Context, e *bun.QueryEvent) { h.c.note(e.Err) }

// Classify turns an error that says the database is damaged into
// core.ErrCorrupt naming the database (other errors are returned as they
// are), so that the daemon can tell corruption from an outage.
func (s *Store) Classify(err error) error {
	if err != nil && isCorrupt(err) {
		s.corrupt.note(err)
		// Both stay visible: a failed submit step is still answered as
		// the specification says (its 500 and the database's message).
		return fmt.Errorf("%w: %s: %w", core.ErrCorrupt, s.corrupt.location, err)
	}
	return err
}

// quickCheck runs SQLite's PRAGMA quick_check (every page and index
// structure, without cross-checking index contents: seconds per GB) and
// records what it finds as damage: Health then reports the store corrupt.
// With Options.CheckProcess it runs in that process (the SQLite plugin's
// own, at the lowest priority), else here at the lowest priority.
func (s *Store) quickCheck(ctx context.Context) {
	start := time.Now()
	var problems []string
	var err error
	if s.opts.CheckProcess != nil {
		problems, err = s.opts.CheckProcess(ctx, s.corrupt.location)
	}
	if s.opts.CheckProcess == nil || errors.Is(err, ErrCheckHere) {
		inBackground(func() { problems, err = QuickCheck(ctx, s.db.DB) })
	}
	switch {
	case err != nil && isCorruptText(err):
		s.corrupt.record("quick_check: " + err.Error())
		return
	case err != nil:
		if ctx.Err() == nil {
			slog.Warn("integrity check could not run (quick_check); it runs again at the next interval", "database", s.corrupt.location, "error", err.Error())
		}
		return
	case len(problems) > 0:
		s.corrupt.record("quick_check: " + strings.Join(problems, "; "))
		return
	}
	if ctx.Err() == nil {
		slog.Info("integrity check passed (quick_check)", "database", s.corrupt.location, "took_ms", time.Since(start).Milliseconds())
	}
}

// ErrCheckHere is Options.CheckProcess's answer when the check is better
// run in this process (a small database).
var ErrCheckHere = errors.New("check in this process")

// QuickCheck runs PRAGMA quick_check(20) on db and returns what it found
// (nil: the database is sound). A statement that fails because the file
// is damaged is an error that isCorruptText recognises.
func QuickCheck(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check(20)")
	if err != nil {
		return nil, corruptText(err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, corruptText(err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	return problems, corruptText(rows.Err())
}

// corruptMark starts the text of an error that says the file is damaged,
// so that it can be told apart after crossing a process boundary.
const corruptMark = "database damaged: "

// corruptText marks err when it says the database is damaged.
func corruptText(err error) error {
	if err != nil && isCorrupt(err) {
		return errors.New(corruptMark + err.Error())
	}
	return err
}

// isCorruptText reports whether err was marked by corruptText.
func isCorruptText(err error) bool { return strings.HasPrefix(err.Error(), corruptMark) }

// IsCorruptError reports whether an error of QuickCheck says the database
// is damaged.
func IsCorruptError(err error) bool { return err != nil && isCorruptText(err) }

// QuickCheckFile opens the SQLite database at path read-only and runs
// QuickCheck on it: the SQLite plugin's child process (Options.CheckProcess).
func QuickCheckFile(ctx context.Context, path string) ([]string, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(15000)")
	q.Set("mode", "ro")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return QuickCheck(ctx, db)
}

// checkSQLiteFile refuses, before threatd's own connection opens it (its
// pragmas would already write: WAL mode), a file that is not a SQLite
// database, is damaged where SQLite must read first (its header and
// schema), or is a SQLite database of another application. A missing file
// is fine: it becomes a new database. An empty one becomes one only when
// createEmpty (threatd migrate) says so: a database truncated to 0 bytes by
// a failed copy or a full disk must not silently start afresh.
func checkSQLiteFile(ctx context.Context, path string, createEmpty bool) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if fi.Size() == 0 {
		if createEmpty {
			return nil
		}
		return fmt.Errorf("sqlite: %s is an empty file (0 bytes), not a database: if it was a database, restore it from a backup; "+
			"to start a new database in it, run threatd migrate", path)
	}
	ro, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer ro.Close()
	var tables []string
	rows, err := ro.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
	if err == nil {
		for rows.Next() {
			var name string
			if err = rows.Scan(&name); err != nil {
				break
			}
			tables = append(tables, name)
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
	}
	if err != nil {
		if isCorrupt(err) {
			return fmt.Errorf("sqlite: %s is not a SQLite database, or is damaged (%v): restore it from a backup, or point data_dir or storage.dsn at the right file", path, err)
		}
		return fmt.Errorf("sqlite: cannot read %s: %w", path, err)
	}
	if len(tables) == 0 {
		return nil
	}
	for _, t := range tables {
		if t == "bun_migrations" {
			return nil
		}
	}
	if len(tables) > 5 {
		tables = append(tables[:5], "…")
	}
	return fmt.Errorf("sqlite: %s is not a threatd database (it holds the tables %s): point data_dir or storage.dsn at threatd's own file", path, strings.Join(tables, ", "))
}
