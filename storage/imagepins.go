package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// imagePinRow is a digest pinned under a report of an image.
type imagePinRow struct {
	bun.BaseModel `bun:"table:image_pins"`

	ThreatID string    `bun:"threat_id,pk"`
	Digest   string    `bun:"digest,pk"`
	PinnedAt time.Time `bun:"pinned_at,notnull"`
}

// maxDigest bounds a pinned digest: algorithm:hex (sha512 is 135 bytes).
const maxDigest = 256

// PinDigests records pins, one statement; a pin already recorded is kept.
// A report with MaxDigestPins pins takes no more.
func (s *Store) PinDigests(ctx context.Context, pins []firewall.DigestPin) error {
	if len(pins) > core.MaxGetThreats {
		return core.Invalid("pins", "at most %d in one call", core.MaxGetThreats)
	}
	if len(pins) == 0 {
		return nil
	}
	rows := make([]imagePinRow, 0, len(pins))
	ids := map[string]bool{}
	for _, p := range pins {
		if p.ThreatID == "" || p.Digest == "" || len(p.Digest) > maxDigest || len(p.ThreatID) > maxDigest {
			return core.Invalid("pins", "a pin names a report and a digest of at most %d bytes", maxDigest)
		}
		ids[p.ThreatID] = true
		rows = append(rows, imagePinRow{ThreatID: p.ThreatID, Digest: p.Digest, PinnedAt: p.PinnedAt.UTC()})
	}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		// Reports at their bound take no more.
		var full []string
		keys := make([]string, 0, len(ids))
		for id := range ids {
			keys = append(keys, id)
		}
		if err := tx.NewSelect().Model((*imagePinRow)(nil)).Column("threat_id").Where("threat_id IN (?)", bun.List(keys)).
			Group("threat_id").Having("COUNT(*) >= ?", firewall.MaxDigestPins).Scan(ctx, &full); err != nil {
			return err
		}
		if len(full) > 0 {
			skip := map[string]bool{}
			for _, id := range full {
				skip[id] = true
			}
			kept := rows[:0]
			for _, r := range rows {
				if !skip[r.ThreatID] {
					kept = append(kept, r)
				}
			}
			if rows = kept; len(rows) == 0 {
				return nil
			}
		}
		_, err := tx.NewInsert().Model(&rows).On("CONFLICT (threat_id, digest) DO NOTHING").Exec(ctx)
		return err
	})
}

// PinnedDigests reads the pins of reports through the primary key, at
// most MaxDigestPins a report.
func (s *Store) PinnedDigests(ctx context.Context, threatIDs []string) ([]firewall.DigestPin, error) {
	if len(threatIDs) > core.MaxGetThreats {
		return nil, core.Invalid("threat_ids", "at most %d in one call", core.MaxGetThreats)
	}
	out := []firewall.DigestPin{}
	if len(threatIDs) == 0 {
		return out, nil
	}
	var rows []imagePinRow
	if err := s.db.NewSelect().Model(&rows).Where("threat_id IN (?)", bun.List(threatIDs)).
		OrderExpr("threat_id, pinned_at, digest").Limit(int64(len(threatIDs) * firewall.MaxDigestPins)).Scan(ctx); err != nil {
		return nil, err
	}
	for _, r := range rows {
		out = append(out, firewall.DigestPin{ThreatID: r.ThreatID, Digest: r.Digest, PinnedAt: r.PinnedAt.UTC()})
	}
	return out, nil
}
