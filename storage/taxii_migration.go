package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/threatd/threatd/core"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// taxiiBackfill is migration 0012, in Go: it gives each published change
// before this version its own microsecond (appendChanges does so for new
// ones), and records the STIX object ids of every report published before
// (stix_objects, migration 0011). Both steps are idempotent: a run cut
// short is taken up again at the next start.
var taxiiBackfill = migrate.Migration{
	Name:    "0012",
	Comment: "taxii_backfill",
	Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		db := m.DB()
		if err := spaceFeedEvents(ctx, db); err != nil {
			return fmt.Errorf("space published changes: %w", err)
		}
		if err := backfillObjectIDs(ctx, db); err != nil {
			return fmt.Errorf("stix object ids: %w", err)
		}
		return nil
	},
}

// spaceFeedEvents moves each change that shares its time with an earlier
// one (an import wrote a batch at one clock reading) to the first free
// microsecond after the change before it, keeping (at, seq) order. With i
// the row's rank in (at, seq) order, the new time is
// i µs + max over the rows up to it of (at − rank µs).
func spaceFeedEvents(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() == dialect.PG {
		_, err := db.ExecContext(ctx, `UPDATE feed_events AS f SET at = m.nat
FROM (SELECT seq, at, max(at - rn * interval '1 microsecond') OVER (ORDER BY rn) + rn * interval '1 microsecond' AS nat
      FROM (SELECT seq, at, row_number() OVER (ORDER BY at, seq) AS rn FROM feed_events) AS r) AS m
WHERE f.seq = m.seq AND m.nat <> f.at`)
		return err
	}
	// SQLite keeps times as text: the running maximum is worked out here
	// over every row's (seq, at), read first (16 bytes a change), and only
	// the rows that move are written.
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		type position struct {
			Seq int64     `bun:"seq"`
			At  time.Time `bun:"at"`
		}
		var all []position
		if err := tx.NewSelect().Table("feed_events").Column("seq", "at").OrderExpr("at, seq").Scan(ctx, &all); err != nil {
			return err
		}
		var prev time.Time
		for i, r := range all {
			at := r.At.UTC()
			if i > 0 && !at.After(prev) {
				at = prev.Add(time.Microsecond)
				if _, err := tx.NewUpdate().Table("feed_events").Set("at = ?", at).Where("seq = ?", r.Seq).Exec(ctx); err != nil {
					return err
				}
			}
			prev = at
		}
		return nil
	})
}

// backfillObjectIDs records the STIX object ids of every report with a
// published change, backfillBatch reports at a time.
func backfillObjectIDs(ctx context.Context, db *bun.DB) error {
	next := func(ctx context.Context, after string) (ids []string, err error) {
		err = db.NewSelect().Table("feed_events").ColumnExpr("DISTINCT threat_id").Where("threat_id > ?", after).
			OrderExpr("threat_id").Limit(backfillBatch).Scan(ctx, &ids)
		return ids, err
	}
	return backfill(ctx, db, next, func(id string) string { return id }, func(ctx context.Context, tx bun.Tx, ids []string) error {
		var rows []threatRow
		if err := tx.NewSelect().Model(&rows).ExcludeColumn(laterThreatColumns...).Relation("Details", detailsWithoutIOCs).Where("threat_row.id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
			return err
		}
		var objects []stixObjectRow
		for _, r := range rows {
			// Every report is stored before migration 0021 here: its ids
			// are listed.
			objects = objectRows(objects, r.ID, true, core.Derive(r.domain()).IOCs)
		}
		return insertObjectIDs(ctx, tx, objects)
	})
}
