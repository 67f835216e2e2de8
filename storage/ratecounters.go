package storage

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

type rateCounterRow struct {
	bun.BaseModel `bun:"table:rate_counters"`

	Win   int64  `bun:"win,pk"`
	Key   string `bun:"key,pk"`
	Count int64  `bun:"count,notnull"`
}

// sameLength bounds how far back a sync forgets windows (100,000 minutes
// is 69 days; the hour windows of now are 29 million minutes behind).
const sameLength = 100_000

// SyncRateCounts adds deltas to window's shared counters, forgets windows
// older than the previous one, and returns every total of window.
//
// Limiters of different window lengths share the table (the API's per
// minute, the sightings' per hour): their window numbers (Unix time over
// the length) are millions apart, so a sync forgets only the older
// windows of its own length, those less than sameLength before it.
func (s *Store) SyncRateCounts(ctx context.Context, r core.RateCounts) (map[string]int64, error) {
	window, deltas := r.Window, r.Counts
	unlock, err := s.writeTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if len(deltas) > 0 {
			rows := make([]rateCounterRow, 0, len(deltas))
			for k, v := range deltas {
				rows = append(rows, rateCounterRow{Win: window, Key: k, Count: v})
			}
			_, err := tx.NewInsert().Model(&rows).
				On("CONFLICT (win, key) DO UPDATE").
				Set("count = ?TableAlias.count + EXCLUDED.count").Exec(ctx)
			if err != nil {
				return err
			}
		}
		_, err := tx.NewDelete().Model((*rateCounterRow)(nil)).Where("win < ? AND win > ?", window-1, window-sameLength).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	var rows []rateCounterRow
	if err := s.db.NewSelect().Model(&rows).Where("win = ?", window).Scan(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.Key] = r.Count
	}
	return out, nil
}
