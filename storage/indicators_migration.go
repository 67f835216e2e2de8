package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"

	"github.com/threatd/threatd/core"
)

// indicatorsBackfill is migration 0016, in Go: it records the indicators of
// every report verified before migration 0015 (threat_indicators), which
// appendChanges does for the reports published since. It is idempotent: a
// run cut short is taken up again at the next start.
var indicatorsBackfill = migrate.Migration{
	Name:    "0016",
	Comment: "indicators_backfill",
	Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		if err := backfillIndicators(ctx, m.DB()); err != nil {
			return fmt.Errorf("indicators: %w", err)
		}
		return nil
	},
}

// backfillIndicators works out the indicators of the verified reports,
// backfillBatch at a time in id order (the primary key's).
func backfillIndicators(ctx context.Context, db *bun.DB) error {
	// A range of the primary key per batch: SQLite's planner chose the
	// status index and sorted every verified report after the position
	// for each batch (quadratic: a third of a million reports in 5
	// minutes, then slower); the unary + keeps it off that index.
	status := "threat_row.status = ?"
	if db.Dialect().Name() == dialect.SQLite {
		status = "+" + status
	}
	next := func(ctx context.Context, after string) (rows []threatRow, err error) {
		err = db.NewSelect().Model(&rows).ExcludeColumn(laterThreatColumns...).Relation("Details", detailsWithoutIOCs).
			Where(status+" AND threat_row.id > ?", string(core.StatusVerified), after).
			OrderExpr("threat_row.id").Limit(backfillBatch).Scan(ctx)
		return rows, err
	}
	return backfill(ctx, db, next, threatRowID, func(ctx context.Context, tx bun.Tx, rows []threatRow) error {
		var indicators []indicatorRow
		for _, r := range rows {
			indicators = indicatorRows(indicators, r.ID, core.Derive(r.domain()).IOCs)
		}
		return insertIndicators(ctx, tx, indicators)
	})
}
