package storage

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/threatd/threatd/core"
)

// iocsBackfill is migration 0020, in Go: it derives the indicators
// (core.Derive) of every report written before migration 0019 added
// threat_details.iocs, whatever its status, 500 reports per transaction in
// primary-key order, so that memory stays bounded whatever the number of
// reports. It is idempotent: a run cut short is taken up again at the next
// start, from the first report still without them.
var iocsBackfill = migrate.Migration{
	Name:    "0020",
	Comment: "iocs_backfill",
	Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		if err := backfillIOCs(ctx, m.DB()); err != nil {
			return fmt.Errorf("iocs: %w", err)
		}
		return nil
	},
}

// backfillIOCs derives and writes the indicators of the reports whose
// iocs column is NULL.
func backfillIOCs(ctx context.Context, db *bun.DB) error {
	next := func(ctx context.Context, after string) (rows []threatRow, err error) {
		err = db.NewSelect().Model(&rows).ExcludeColumn(append([]string{legacyColumn}, disputeColumns...)...).Relation("Details").
			Where("threat_row.id > ?", after).Where(`"details"."iocs" IS NULL`).
			OrderExpr("threat_row.id").Limit(backfillBatch).Scan(ctx)
		return rows, err
	}
	return backfill(ctx, db, next, threatRowID, func(ctx context.Context, tx bun.Tx, rows []threatRow) error {
		for _, r := range rows {
			if r.Details == nil {
				continue
			}
			iocs, err := json.Marshal(storedIOCs(core.Derive(r.domain()).IOCs))
			if err != nil {
				return err
			}
			if _, err := tx.NewUpdate().Table("threat_details").Set("iocs = ?", string(iocs)).Where("threat_id = ?", r.ID).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}
