package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// feedKinds (migration 0025) lets feed_events hold the kinds of a
// dispute and its end (core.ChangeDisputed, core.ChangeKept): PostgreSQL
// replaces the kind check; SQLite, which cannot alter a check, rebuilds
// the table with every row, seq and index as they were, and keeps its
// sequence where it was (a seq is never given twice).
var feedKinds = migrate.Migration{
	Name:    "0025",
	Comment: "feed_kinds",
	Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		db := m.DB()
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, q := range feedKindsSQL(db.Dialect().Name()) {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return fmt.Errorf("feed kinds: %w: %.80s", err, q)
				}
			}
			return nil
		})
	},
}

const feedKindCheck = "CHECK (kind IN ('verified', 'revised', 'withdrawn', 'disputed', 'kept'))"

func feedKindsSQL(d dialect.Name) []string {
	if d == dialect.PG {
		return []string{
			"ALTER TABLE feed_events DROP CONSTRAINT feed_events_kind_check",
			"ALTER TABLE feed_events ADD CONSTRAINT feed_events_kind_check " + feedKindCheck,
		}
	}
	return []string{
		`CREATE TABLE feed_events_new (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    at        TIMESTAMP NOT NULL,
    threat_id TEXT NOT NULL REFERENCES threats (id) ON DELETE CASCADE,
    registry  TEXT,
    kind      TEXT NOT NULL ` + feedKindCheck + `,
    version   INTEGER NOT NULL
)`,
		"INSERT INTO feed_events_new (seq, at, threat_id, registry, kind, version) SELECT seq, at, threat_id, registry, kind, version FROM feed_events ORDER BY seq",
		"DELETE FROM sqlite_sequence WHERE name = 'feed_events_new'",
		"INSERT INTO sqlite_sequence (name, seq) SELECT 'feed_events_new', max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'feed_events'), 0), COALESCE((SELECT max(seq) FROM feed_events), 0))",
		"DROP TABLE feed_events",
		"ALTER TABLE feed_events_new RENAME TO feed_events",
		"CREATE INDEX feed_events_at_idx ON feed_events (at, seq)",
		"CREATE INDEX feed_events_registry_idx ON feed_events (registry, at, seq)",
		"CREATE INDEX feed_events_withdrawn_idx ON feed_events (at, seq) WHERE kind = 'withdrawn'",
		"CREATE INDEX feed_events_threat_idx ON feed_events (threat_id, seq)",
	}
}
