package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// ledgerRow is one row of the firewall's ledger.
type ledgerRow struct {
	bun.BaseModel `bun:"table:firewall_ledger"`

	Ecosystem string    `bun:"ecosystem,pk"`
	Name      string    `bun:"name,pk"`
	Version   string    `bun:"version,pk"`
	Purl      string    `bun:"purl,notnull"`
	UserEmail string    `bun:"user_email,notnull"`
	TokenID   string    `bun:"token_id,pk"`
	ClientIP  string    `bun:"client_ip,pk"`
	Day       time.Time `bun:"day,pk"`
	FirstAt   time.Time `bun:"first_at,notnull"`
	LastAt    time.Time `bun:"last_at,notnull"`
	Count     int64     `bun:"count,notnull"`
}

// maxLedgerText bounds a ledger row's texts.
const maxLedgerText = 2048

// RecordLedger adds the entries in one statement per 1,000: a row that
// exists adds the count and widens its first and last.
func (s *Store) RecordLedger(ctx context.Context, es []firewall.LedgerEntry) error {
	if len(es) > core.MaxGetThreats*10 {
		return core.Invalid("entries", "at most %d in one call", core.MaxGetThreats*10)
	}
	if len(es) == 0 {
		return nil
	}
	rows := make([]ledgerRow, 0, len(es))
	for _, e := range es {
		if e.Ecosystem == "" || e.Name == "" || len(e.Name) > maxLedgerText || len(e.Version) > maxLedgerText || len(e.Purl) > maxLedgerText || e.Count < 1 {
			return core.Invalid("entries", "an entry names an ecosystem, a name, a version and a count")
		}
		rows = append(rows, ledgerRow{Ecosystem: e.Ecosystem, Name: e.Name, Version: e.Version, Purl: e.Purl, UserEmail: e.User, TokenID: e.TokenID,
			ClientIP: e.ClientIP, Day: e.Day.UTC(), FirstAt: e.First.UTC(), LastAt: e.Last.UTC(), Count: e.Count})
	}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.NewInsert().Model(&rows).
			On("CONFLICT (ecosystem, name, version, token_id, client_ip, day) DO UPDATE").
			Set("count = ?TableAlias.count + EXCLUDED.count").
			Set("first_at = CASE WHEN EXCLUDED.first_at < ?TableAlias.first_at THEN EXCLUDED.first_at ELSE ?TableAlias.first_at END").
			Set("last_at = CASE WHEN EXCLUDED.last_at > ?TableAlias.last_at THEN EXCLUDED.last_at ELSE ?TableAlias.last_at END").
			Set("user_email = EXCLUDED.user_email").
			Exec(ctx)
		return err
	})
}

// ledgerTrimBatch is how many rows one trimming transaction removes: a
// shortened ledger_keep may expire millions of rows, and one statement
// for them all would hold the writer (SQLite's only one) for minutes.
const ledgerTrimBatch = 10_000

// TrimLedger removes the rows of days before t.Before through the day
// index, a transaction of ledgerTrimBatch rows at a time.
func (s *Store) TrimLedger(ctx context.Context, t firewall.LedgerTrim) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.write(ctx, func(ctx context.Context, tx *txn) error {
			// By the row's own address, which both engines look up
			// directly (a row-value IN read the whole table per batch).
			q := `DELETE FROM firewall_ledger WHERE rowid IN (SELECT rowid FROM firewall_ledger WHERE day < ? LIMIT ?)`
			if s.dialect == Postgres {
				q = `DELETE FROM firewall_ledger WHERE ctid = ANY(ARRAY(SELECT ctid FROM firewall_ledger WHERE day < ? LIMIT ?))`
			}
			res, err := tx.ExecContext(ctx, q, t.Before.UTC(), ledgerTrimBatch)
			if err != nil {
				return err
			}
			n, _ = res.RowsAffected()
			return nil
		})
		total += n
		if err != nil || n < ledgerTrimBatch {
			return total, err
		}
	}
}

// LedgerOf reads a package's rows through the primary key, in its order.
func (s *Store) LedgerOf(ctx context.Context, q firewall.LedgerQuery) ([]firewall.LedgerEntry, error) {
	if err := core.CheckLimit(q.Limit, firewall.MaxLedgerPage); err != nil {
		return nil, err
	}
	var rows []ledgerRow
	sel := s.db.NewSelect().Model(&rows).Where("ecosystem = ? AND name = ?", q.Ecosystem, q.Name)
	if q.Version != "" {
		sel = sel.Where("version = ?", q.Version)
	}
	if a := q.After; a != nil {
		sel = sel.Where("(version, token_id, client_ip, day) > (?, ?, ?, ?)", a.Version, a.TokenID, a.ClientIP, a.Day.UTC())
	}
	if err := sel.OrderExpr("version, token_id, client_ip, day").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]firewall.LedgerEntry, len(rows))
	for i, r := range rows {
		out[i] = firewall.LedgerEntry{Ecosystem: r.Ecosystem, Name: r.Name, Version: r.Version, Purl: r.Purl, User: r.UserEmail, TokenID: r.TokenID,
			ClientIP: r.ClientIP, Day: r.Day.UTC(), First: r.FirstAt.UTC(), Last: r.LastAt.UTC(), Count: r.Count}
	}
	return out, nil
}

var _ firewall.LedgerStore = (*Store)(nil)
