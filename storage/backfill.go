package storage

import (
	"context"

	"github.com/uptrace/bun"
)

// backfillBatch is how many reports a Go migration's backfill reads and
// writes per transaction: memory stays bounded whatever the number of
// reports.
const backfillBatch = 500

// backfill is the walk the Go migrations share: next reads the batch of at
// most backfillBatch after the key after, in key order (a range of the
// primary key: never a sort of everything after it), and key gives an
// item's key; write stores what is derived of a batch, in one transaction.
// The walk ends at the first empty batch. Each migration picks its items
// so that a run cut short is taken up again at the next start.
func backfill[T any](ctx context.Context, db *bun.DB, next func(ctx context.Context, after string) ([]T, error), key func(T) string,
	write func(ctx context.Context, tx bun.Tx, batch []T) error) error {
	after := ""
	for {
		batch, err := next(ctx, after)
		if err != nil || len(batch) == 0 {
			return err
		}
		after = key(batch[len(batch)-1])
		if err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return write(ctx, tx, batch) }); err != nil {
			return err
		}
	}
}

func threatRowID(r threatRow) string { return r.ID }
