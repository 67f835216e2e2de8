package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

type secretRow struct {
	bun.BaseModel `bun:"table:secrets"`

	Name  string    `bun:"name,pk"`
	Value string    `bun:"value,notnull"`
	At    time.Time `bun:"created_at,notnull"`
}

// Secret returns the named secret, creating it on first use. Concurrent
// first uses agree: the insert ignores a conflict and everyone reads back.
func (s *Store) Secret(ctx context.Context, name string) (string, error) {
	var value string
	err := s.db.NewSelect().Table("secrets").Column("value").Where("name = ?", name).Scan(ctx, &value)
	if err == nil {
		return value, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	row := secretRow{Name: name, Value: hex.EncodeToString(b), At: s.now()}
	if _, err := s.db.NewInsert().Model(&row).On("CONFLICT (name) DO NOTHING").Exec(ctx); err != nil {
		return "", err
	}
	err = s.db.NewSelect().Table("secrets").Column("value").Where("name = ?", name).Scan(ctx, &value)
	return value, err
}

type usageRow struct {
	bun.BaseModel `bun:"table:paid_usage"`

	Day      string `bun:"day,pk"`
	TokenID  string `bun:"token_id,pk"`
	Endpoint string `bun:"endpoint,pk"`
	Calls    int64  `bun:"calls,notnull"`
}

// AddUsage adds paid-call counts.
func (s *Store) AddUsage(ctx context.Context, deltas []core.UsageDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	rows := make([]usageRow, len(deltas))
	for i, d := range deltas {
		rows[i] = usageRow{Day: d.Day, TokenID: d.TokenID, Endpoint: d.Endpoint, Calls: d.Calls}
	}
	_, err := s.db.NewInsert().Model(&rows).On("CONFLICT (day, token_id, endpoint) DO UPDATE").
		Set("calls = ?TableAlias.calls + EXCLUDED.calls").Exec(ctx)
	return err
}

// Usage returns a token's paid calls of a day by endpoint.
func (s *Store) Usage(ctx context.Context, q core.UsageQuery) (map[string]int64, error) {
	tokenID, day := q.TokenID, q.Day
	var rows []usageRow
	if err := s.db.NewSelect().Model(&rows).Where("token_id = ?", tokenID).Where("day = ?", day).Scan(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.Endpoint] = r.Calls
	}
	return out, nil
}

type leaseRow struct {
	bun.BaseModel `bun:"table:leases"`

	Name      string    `bun:"name,pk"`
	Holder    string    `bun:"holder,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

// Lease takes the named lease when it is free or expired, or renews it for
// its holder.
func (s *Store) Lease(ctx context.Context, l core.LeaseClaim) (bool, error) {
	name, holder, ttl := l.Name, l.Holder, l.TTL
	now := s.now()
	row := leaseRow{Name: name, Holder: holder, ExpiresAt: now.Add(ttl)}
	_, err := s.db.NewInsert().Model(&row).
		On("CONFLICT (name) DO UPDATE").
		Set("holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at").
		Where("?TableAlias.expires_at < ? OR ?TableAlias.holder = ?", now, holder).Exec(ctx)
	if err != nil {
		return false, err
	}
	var got leaseRow
	if err := s.db.NewSelect().Model(&got).Where("name = ?", name).Scan(ctx); err != nil {
		return false, err
	}
	return got.Holder == holder, nil
}
