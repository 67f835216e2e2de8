package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect names a SQL backend. Everything that differs between the dialects
// lives in this file.
type Dialect string

// The supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// migrationData fills the {{.NAME}} placeholders of the migration files.
var migrationData = map[Dialect]map[string]string{
	SQLite: {
		"TIMESTAMP": "TIMESTAMP",
		"JSON":      "TEXT",
		"SERIAL_PK": "INTEGER PRIMARY KEY AUTOINCREMENT",
		// Migration 0009: a stored patch's "cleared" list becomes [] values.
		"CLEAR_TAGS": `UPDATE threat_revisions SET changes = json_set(changes, '$.tags', json('[]'))
    WHERE json_type(changes, '$.cleared') = 'array' AND EXISTS (SELECT 1 FROM json_each(changes, '$.cleared') AS c WHERE c.value = 'tags')`,
		"CLEAR_CONTRIBUTORS": `UPDATE threat_revisions SET changes = json_set(changes, '$.contributors', json('[]'))
    WHERE json_type(changes, '$.cleared') = 'array' AND EXISTS (SELECT 1 FROM json_each(changes, '$.cleared') AS c WHERE c.value = 'contributors')`,
		"DROP_CLEARED": `UPDATE threat_revisions SET changes = json_remove(changes, '$.cleared') WHERE json_type(changes, '$.cleared') IS NOT NULL`,
		// Byte order for prefix ranges (SQLite's default, BINARY).
		"BYTE_ORDER": "",
	},
	Postgres: {
		"TIMESTAMP":          "TIMESTAMPTZ",
		"JSON":               "JSONB",
		"SERIAL_PK":          "BIGSERIAL PRIMARY KEY",
		"CLEAR_TAGS":         `UPDATE threat_revisions SET changes = jsonb_set(changes, '{tags}', '[]'::jsonb) WHERE jsonb_exists(changes->'cleared', 'tags')`,
		"CLEAR_CONTRIBUTORS": `UPDATE threat_revisions SET changes = jsonb_set(changes, '{contributors}', '[]'::jsonb) WHERE jsonb_exists(changes->'cleared', 'contributors')`,
		"DROP_CLEARED":       `UPDATE threat_revisions SET changes = changes - 'cleared' WHERE jsonb_exists(changes, 'cleared')`,
		"BYTE_ORDER":         `COLLATE "C"`,
	},
}

// byteOrder is migrationData's BYTE_ORDER: the collation under which text
// compares byte by byte (a prefix is then a range).
func byteOrder(d Dialect) string { return migrationData[d]["BYTE_ORDER"] }

// feedLockKey is the PostgreSQL advisory lock that orders change-feed commits.
const feedLockKey = 0x74687264 // "thrd"

// lockFeed makes change-feed sequence numbers follow commit order. On
// PostgreSQL a sequence value is taken at insert time, not at commit, so two
// writers could commit seq 8 before seq 7 and a follower reading "seq > 6"
// would skip 7 for ever. Holding a transaction-scoped advisory lock from
// the moment the seq is taken until commit serialises that last step of
// every writer, which makes seq order equal commit order. SQLite has a
// single writer at a time (BEGIN IMMEDIATE), so no lock is needed there.
func lockFeed(ctx context.Context, d Dialect, tx bun.Tx) error {
	if d != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", feedLockKey)
	return err
}

// openSQLite opens a SQLite file with the settings threatd relies on: WAL for
// concurrent readers, a busy timeout, foreign keys on, and write
// transactions that take the write lock at BEGIN (no upgrade deadlocks).
func openSQLite(path string) (*bun.DB, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	q := url.Values{}
	for _, p := range []string{"busy_timeout(15000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)",
		// Reads through a memory map: a page read is a memory access, not a
		// system call and a copy, shared by every connection. SQLite as
		// modernc.org/sqlite builds it maps at most 2 GiB whatever is asked
		// (its SQLITE_MAX_MMAP_SIZE, 0x7fff0000; PRAGMA mmap_size answers
		// 2147418112): a million reports take about 3 GB, and the pages
		// past 2 GiB are read with pread into each connection's page cache. Random record look-ups at a
		// million reports: 297 µs without the map, 225 µs with it (82 µs
		// with the prepared statement of GetThreats); a 200k import ran at
		// 5,543–6,009 records/s with these settings against 5,259–5,309
		// without the map and with checkpoints on commit (one A/B run,
		// docs/performance.md). 32 MiB of page cache per connection on top
		// (its pages are the plugin's own memory, four connections' worth):
		// with 128 MiB, the plugin's anonymous memory reached 410–430 MB
		// during a 200k import and 570–670 MB at start-up at a million
		// reports (the index load and the integrity check filling two
		// caches), against 200–220 MB and about 210 MB with 32 MiB, at the
		// same import speed (2,989/3,750 against 3,280/3,646 records/s,
		// runs in turn).
		"cache_size(-32768)", "mmap_size(4294967296)",
		// No checkpoint on the commit path: a commit that crossed the
		// 1,000-page mark copied the WAL into a 2 GB file and synced it while
		// every writer waited (submissions' p99 was 0.5–0.7 s at a million
		// reports). checkpointLoop does it in the background instead.
		"wal_autocheckpoint(0)",
		// Temporary files in memory: the savepoint journals of group commits
		// (storage/group.go) went to a temporary file.
		"temp_store(MEMORY)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// One writer at a time is SQLite's model; a small pool serves readers.
	// Every connection stays open: with database/sql's default of two idle
	// ones, the pool closed and reopened connections under load, each
	// opening paying the pragmas above and the prepared statements again
	// (5 % of the storage plugin's CPU under submissions).
	sqldb.SetMaxOpenConns(4)
	sqldb.SetMaxIdleConns(4)
	if err := firstConnection(sqldb); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

// firstConnection opens one connection before any other can be, so that a
// new database is switched to WAL once. SQLite switches the journal mode
// under an exclusive lock taken without its busy handler: two connections
// opening a new file together (a migration and the store's first
// quick_check) failed with SQLITE_BUSY at once, busy_timeout or not.
// Another process switching the same new file is waited for, as long as
// busy_timeout.
func firstConnection(db *sql.DB) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := db.Ping()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isBusy reports a SQLite SQLITE_BUSY or SQLITE_LOCKED result.
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return false
}

// openPostgres connects to PostgreSQL at dsn (postgres://user:pass@host:port/db?sslmode=…).
func openPostgres(dsn string) (*bun.DB, error) {
	if dsn == "" {
		return nil, errors.New("postgres: storage.dsn is required (postgres://user:password@host:5432/database?sslmode=disable)")
	}
	if _, err := url.Parse(dsn); err != nil || !strings.HasPrefix(dsn, "postgres") {
		return nil, errors.New("postgres: storage.dsn must be a postgres:// URL")
	}
	sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithApplicationName("threatd")))
	sqldb.SetMaxOpenConns(32)
	sqldb.SetMaxIdleConns(8)
	return bun.NewDB(sqldb, pgdialect.New()), nil
}

// PostgreSQL error classes (SQLSTATE).
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
)

// isUniqueViolation reports whether err is a unique-constraint violation.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	var pe pgdriver.Error
	return errors.As(err, &pe) && pe.Field('C') == pgUniqueViolation
}

// isForeignKeyViolation reports whether err is a foreign-key violation.
func isForeignKeyViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	var pe pgdriver.Error
	return errors.As(err, &pe) && pe.Field('C') == pgForeignKeyViolation
}

// lockUser serialises one user's submissions, so that the new-user cap and
// the hourly limit are exact under concurrency. SQLite's write transactions
// are already serial; PostgreSQL locks the user's row until commit.
func lockUser(ctx context.Context, d Dialect, tx bun.Tx, userID string) error {
	if d != Postgres || userID == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT 1 FROM users WHERE id = ? FOR UPDATE", userID)
	return err
}

// lockRow makes q lock the selected row of alias until commit on PostgreSQL
// (SQLite's write transactions are serial already).
func lockRow(d Dialect, q *bun.SelectQuery, alias string) *bun.SelectQuery {
	if d == Postgres {
		return q.For("UPDATE OF " + alias)
	}
	return q
}

// resetFeedSequence makes the change feed continue after copied rows: on
// PostgreSQL the sequence is moved past max(seq); SQLite's AUTOINCREMENT
// follows explicit values by itself.
func resetFeedSequence(ctx context.Context, d Dialect, tx bun.Tx) error {
	if d != Postgres {
		return nil
	}
	for _, table := range []string{"changes", "feed_events"} {
		if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('`+table+`', 'seq'), coalesce((SELECT max(seq) FROM `+table+`), 0) + 1, false)`); err != nil {
			return err
		}
	}
	for _, c := range [][2]string{{"webhook_attempts", "id"}, {"rule_ids", "number"}} {
		if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('`+c[0]+`', '`+c[1]+`'), coalesce((SELECT max(`+c[1]+`) FROM `+c[0]+`), 0) + 1, false)`); err != nil {
			return err
		}
	}
	return nil
}

// tableUsing names table for a query that must read it through index. With
// no statistics, SQLite's planner may prefer a low-selectivity index (e.g.
// status=? for "canonical_key IN (500 keys) AND status IN (…)", a scan of
// every verified report) over the unique one the query is written for; on
// SQLite the index is pinned with INDEXED BY. PostgreSQL keeps statistics
// (autovacuum) and plans these look-ups by itself.
func tableUsing(d Dialect, table, index string) string {
	if d == SQLite {
		return table + " INDEXED BY " + index
	}
	return table
}
