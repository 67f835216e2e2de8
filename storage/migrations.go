package storage

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// migrationFiles are the schema migrations, embedded so that a plugin binary
// carries its schema with it (never read from the source tree at run time).
//
//go:embed migrations/*.up.sql
var migrationFiles embed.FS

// migrations builds bun migrations from the embedded files, with each file's
// types expanded for dialect d. Every migration runs in one transaction.
func migrations(d Dialect) (*migrate.Migrations, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.up.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	ms := migrate.NewMigrations()
	for _, name := range names {
		raw, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		base := strings.TrimSuffix(path.Base(name), ".up.sql")
		version, comment, ok := strings.Cut(base, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be NNNN_comment.up.sql", name)
		}
		statements := splitStatements(expandTypes(d, string(raw)))
		up := func(ctx context.Context, db *bun.DB) error {
			return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				for _, stmt := range statements {
					if _, err := tx.ExecContext(ctx, stmt); err != nil {
						return fmt.Errorf("%s: %w", firstLine(stmt), err)
					}
				}
				return nil
			})
		}
		ms.Add(migrate.Migration{Name: version, Comment: comment, Up: wrapUp(up)})
	}
	return ms, nil
}

// splitStatements splits a migration on its "--bun:split" markers.
func splitStatements(s string) []string {
	var out []string
	for _, part := range strings.Split(s, "--bun:split") {
		var lines []string
		for _, l := range strings.Split(part, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--") {
				lines = append(lines, l)
			}
		}
		if stmt := strings.TrimSpace(strings.Join(lines, "\n")); stmt != "" {
			out = append(out, strings.TrimSuffix(stmt, ";"))
		}
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

// Migrate applies every pending migration and returns the names applied.
// Concurrent daemons starting on one database take turns (bun's lock table).
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	ms, err := migrations(s.dialect)
	if err != nil {
		return nil, err
	}
	m := migrate.NewMigrator(s.db, ms, migrate.WithMarkAppliedOnSuccess(true))
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

// wrapUp adapts a migration function to the form migrate.Migration.Up takes.
func wrapUp(fn migrate.MigrationFunc) func(context.Context, *migrate.Migrator, *migrate.Migration) error {
	return func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		return fn(ctx, m.DB())
	}
}
