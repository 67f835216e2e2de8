package storage

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// migrationFiles are the schema migrations, embedded so that a plugin binary
// carries its schema with it (never read from the source tree at run time).
// Each is NNNN_comment.tx.up.sql: bun's migrate finds them (Discover), runs
// each in one transaction, splits statements at "--bun:split" and fills the
// dialect's types from migrationData ({{.TIMESTAMP}}).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations returns the embedded migrations.
func migrations() (*migrate.Migrations, error) {
	dir, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(dir); err != nil {
		return nil, err
	}
	ms.Add(taxiiBackfill)
	ms.Add(indicatorsBackfill)
	ms.Add(iocsBackfill)
	ms.Add(feedKinds)
	ms.Add(sourceUsers)
	return ms, nil
}

// laterThreatColumns are the columns of threatRow added by migrations
// after the Go migrations that read reports (0012, 0016): those leave them
// out, since when they run the columns do not exist yet. Migration 0020
// leaves out legacyColumn, added by 0021, and every migration before 0024
// its disputeColumns.
var laterThreatColumns = []string{"severity_level", legacyColumn, "disputed_at", "kept_at"}

// disputeColumns are threatRow's DisputedAt and KeptAt (migration 0024).
var disputeColumns = []string{"disputed_at", "kept_at"}

// legacyColumn is threatRow.LegacySTIXIDs's column (migration 0021).
const legacyColumn = "legacy_stix_ids"

// detailsWithoutIOCs is the Details relation without the stored
// indicators: as the migrations before 0019 read it (the column does not
// exist yet), and as the reads read it whose callers show none.
func detailsWithoutIOCs(q *bun.SelectQuery) *bun.SelectQuery { return q.ExcludeColumn("iocs") }

// migrator runs ms on this store's database with its dialect's types.
func (s *Store) migrator(ms *migrate.Migrations) *migrate.Migrator {
	return migrate.NewMigrator(s.db, ms, migrate.WithMarkAppliedOnSuccess(true), migrate.WithTemplateData(migrationData[s.dialect]))
}

// Migrate applies every pending migration and returns the names applied.
// Concurrent daemons starting on one database take turns (bun's lock table).
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	m := s.migrator(ms)
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("migrate: init: %w", err)
	}
	if err := lockWithRetry(ctx, m); err != nil {
		return nil, err
	}
	defer func() { _ = m.Unlock(context.WithoutCancel(ctx)) }()
	group, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var applied []string
	for _, mg := range group.Migrations {
		applied = append(applied, mg.String())
	}
	return applied, nil
}

// lockWithRetry waits up to 30 s for another process's migration to finish.
func lockWithRetry(ctx context.Context, m *migrate.Migrator) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := m.Lock(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("migrate: another process holds the migration lock: %w", err)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
