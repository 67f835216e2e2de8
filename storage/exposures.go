package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/exposure"
)

type inventoryRow struct {
	bun.BaseModel `bun:"table:inventories"`

	Project   string    `bun:"project,pk"`
	UserEmail string    `bun:"user_email,notnull"`
	TokenID   string    `bun:"token_id,notnull"`
	ScannedAt time.Time `bun:"scanned_at,notnull"`
}

type inventoryItemRow struct {
	bun.BaseModel `bun:"table:inventory_items"`

	Project   string `bun:"project,pk"`
	Ecosystem string `bun:"ecosystem,pk"`
	Name      string `bun:"name,pk"`
	Version   string `bun:"version,pk"`
	Purl      string `bun:"purl,notnull"`
}

type exposureRow struct {
	bun.BaseModel `bun:"table:exposures"`

	ID        int64     `bun:"id,pk,autoincrement"`
	ThreatID  string    `bun:"threat_id,notnull"`
	Kind      string    `bun:"kind,notnull"`
	Ecosystem string    `bun:"ecosystem,notnull"`
	Name      string    `bun:"name,notnull"`
	Version   string    `bun:"version,notnull"`
	Purl      string    `bun:"purl,notnull"`
	UserEmail string    `bun:"user_email,notnull"`
	TokenID   string    `bun:"token_id,notnull"`
	ClientIP  string    `bun:"client_ip,notnull"`
	Project   string    `bun:"project,notnull"`
	FirstAt   time.Time `bun:"first_at,notnull"`
	LastAt    time.Time `bun:"last_at,notnull"`
	Count     int64     `bun:"count,notnull"`
	FoundAt   time.Time `bun:"found_at,notnull"`
	RowKey    string    `bun:"row_key,notnull"`
}

// SaveInventory replaces a project's inventory in one transaction.
func (s *Store) SaveInventory(ctx context.Context, inv exposure.Inventory) error {
	if err := exposure.CheckProject(inv.Project); err != nil {
		return err
	}
	if len(inv.Items) > exposure.MaxItems {
		return core.Invalid("items", "at most %d versions in one inventory", exposure.MaxItems)
	}
	items := make([]inventoryItemRow, 0, len(inv.Items))
	seen := map[exposure.Item]bool{}
	for _, it := range inv.Items {
		key := exposure.Item{Ecosystem: it.Ecosystem, Name: it.Name, Version: it.Version}
		if it.Ecosystem == "" || it.Name == "" || it.Version == "" || seen[key] {
			continue
		}
		seen[key] = true
		items = append(items, inventoryItemRow{Project: inv.Project, Ecosystem: it.Ecosystem, Name: it.Name, Version: it.Version, Purl: it.Purl})
	}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		row := inventoryRow{Project: inv.Project, UserEmail: inv.User, TokenID: inv.TokenID, ScannedAt: inv.ScannedAt.UTC()}
		if _, err := tx.NewInsert().Model(&row).On("CONFLICT (project) DO UPDATE").
			Set("user_email = EXCLUDED.user_email, token_id = EXCLUDED.token_id, scanned_at = EXCLUDED.scanned_at").Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*inventoryItemRow)(nil)).Where("project = ?", inv.Project).Exec(ctx); err != nil {
			return err
		}
		for start := 0; start < len(items); start += 1000 {
			chunk := items[start:min(start+1000, len(items))]
			if _, err := tx.NewInsert().Model(&chunk).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// ExposedVersions reads a page of the distinct versions of a package in
// the ledger (its primary key's prefix) and the inventories (their
// package index), in order.
func (s *Store) ExposedVersions(ctx context.Context, p exposure.Package) ([]string, error) {
	if err := core.CheckLimit(p.Limit, exposure.MaxItems); err != nil {
		return nil, err
	}
	var out []string
	err := s.db.NewSelect().TableExpr("(SELECT DISTINCT version FROM firewall_ledger WHERE ecosystem = ? AND name = ? AND version > ? UNION SELECT DISTINCT version FROM inventory_items WHERE ecosystem = ? AND name = ? AND version > ?) AS v",
		p.Ecosystem, p.Name, p.After, p.Ecosystem, p.Name, p.After).Column("version").OrderExpr("version").Limit(int64(p.Limit)).Scan(ctx, &out)
	return out, err
}

// ExposedPackages reads which of the packages have ledger rows (the
// primary key's prefix) or inventory items (their package index): one
// statement per ecosystem, the names an IN list.
func (s *Store) ExposedPackages(ctx context.Context, ps []exposure.Package) ([]exposure.Package, error) {
	if len(ps) > exposure.MaxBatch {
		return nil, core.Invalid("packages", "at most %d in one call", exposure.MaxBatch)
	}
	byEco := map[string][]string{}
	for _, p := range ps {
		if !slices.Contains(byEco[p.Ecosystem], p.Name) {
			byEco[p.Ecosystem] = append(byEco[p.Ecosystem], p.Name)
		}
	}
	var out []exposure.Package
	for _, eco := range slices.Sorted(maps.Keys(byEco)) {
		var names []string
		err := s.db.NewSelect().TableExpr("(SELECT DISTINCT name FROM firewall_ledger WHERE ecosystem = ? AND name IN (?) UNION SELECT DISTINCT name FROM inventory_items WHERE ecosystem = ? AND name IN (?)) AS p",
			eco, bun.List(byEco[eco]), eco, bun.List(byEco[eco])).Column("name").Scan(ctx, &names)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out = append(out, exposure.Package{Ecosystem: eco, Name: n})
		}
	}
	return out, nil
}

// RecordExposures copies the ledger rows and inventories of the versions
// into exposures, each once per report and row (the unique index).
func (s *Store) RecordExposures(ctx context.Context, f exposure.Found) (int64, error) {
	if f.ThreatID == "" || len(f.Versions) == 0 {
		return 0, nil
	}
	if len(f.Versions) > exposure.MaxItems {
		return 0, core.Invalid("versions", "at most %d", exposure.MaxItems)
	}
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		n = 0
		at := f.At.UTC()
		res, err := tx.ExecContext(ctx, `INSERT INTO exposures (threat_id, kind, ecosystem, name, version, purl, user_email, token_id, client_ip, project, first_at, last_at, count, found_at, row_key)
SELECT ?, ?, l.ecosystem, l.name, l.version, l.purl, l.user_email, l.token_id, l.client_ip, '', l.first_at, l.last_at, l.count, ?,
  l.token_id || '|' || l.client_ip || '|' || CAST(l.day AS TEXT)
FROM firewall_ledger AS l WHERE l.ecosystem = ? AND l.name = ? AND l.version IN (?) AND ? = '' AND l.last_at >= ?
ON CONFLICT DO NOTHING`, f.ThreatID, exposure.KindServed, at, f.Ecosystem, f.Name, bun.List(f.Versions), f.Project, f.Since.UTC())
		if err != nil {
			return fmt.Errorf("exposures of the ledger: %w", err)
		}
		served, _ := res.RowsAffected()
		res, err = tx.ExecContext(ctx, `INSERT INTO exposures (threat_id, kind, ecosystem, name, version, purl, user_email, token_id, client_ip, project, first_at, last_at, count, found_at, row_key)
SELECT ?, ?, i.ecosystem, i.name, i.version, i.purl, inv.user_email, inv.token_id, '', i.project, inv.scanned_at, inv.scanned_at, 1, ?, i.project
FROM inventory_items AS i JOIN inventories AS inv ON inv.project = i.project
WHERE i.ecosystem = ? AND i.name = ? AND i.version IN (?) AND (? = '' OR i.project = ?) AND inv.scanned_at >= ?
ON CONFLICT DO NOTHING`, f.ThreatID, exposure.KindInventory, at, f.Ecosystem, f.Name, bun.List(f.Versions), f.Project, f.Project, f.Since.UTC())
		if err != nil {
			return fmt.Errorf("exposures of the inventories: %w", err)
		}
		listed, _ := res.RowsAffected()
		n = served + listed
		return nil
	})
	return n, err
}

// ListExposures reads a page newest first: a report's through the unique
// index's prefix, a user's through theirs, else the primary key.
func (s *Store) ListExposures(ctx context.Context, q exposure.Query) ([]exposure.Exposure, error) {
	if err := core.CheckLimit(q.Limit, exposure.MaxPage); err != nil {
		return nil, err
	}
	var rows []exposureRow
	sel := s.db.NewSelect().Model(&rows)
	// A report's or a user's entries in id order: read from their index
	// whatever the statistics say (a rare report's rows are few among
	// millions).
	switch {
	case q.ThreatID != "":
		sel = sel.ModelTableExpr(tableUsing(s.dialect, "exposures AS exposure_row", "exposures_threat_idx"))
	case q.User != "":
		sel = sel.ModelTableExpr(tableUsing(s.dialect, "exposures AS exposure_row", "exposures_user_idx"))
	}
	if q.ThreatID != "" {
		sel = sel.Where("threat_id = ?", q.ThreatID)
	}
	if q.User != "" {
		sel = sel.Where("user_email = ?", q.User)
	}
	if !q.Since.IsZero() {
		sel = sel.Where("found_at >= ?", q.Since.UTC())
	}
	if q.After > 0 {
		sel = sel.Where("id < ?", q.After)
	}
	if err := sel.OrderExpr("id DESC").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]exposure.Exposure, len(rows))
	for i, r := range rows {
		out[i] = exposure.Exposure{ID: r.ID, ThreatID: r.ThreatID, Purl: r.Purl, Kind: r.Kind, Ecosystem: r.Ecosystem, Name: r.Name, Version: r.Version,
			User: r.UserEmail, TokenID: r.TokenID, ClientIP: r.ClientIP, Project: r.Project, First: r.FirstAt.UTC(), Last: r.LastAt.UTC(), Count: r.Count, FoundAt: r.FoundAt.UTC()}
	}
	return out, nil
}

// ExposureCount counts a report's exposures (the unique index's prefix).
func (s *Store) ExposureCount(ctx context.Context, threatID string) (int64, error) {
	n, err := s.db.NewSelect().Model((*exposureRow)(nil)).Where("threat_id = ?", threatID).Count(ctx)
	return int64(n), err
}

type exposureEventRow struct {
	bun.BaseModel `bun:"table:exposure_events"`

	ID       int64     `bun:"id,pk,autoincrement"`
	ThreatID string    `bun:"threat_id,notnull"`
	At       time.Time `bun:"at,notnull"`
}

// exposureSeqBase numbers exposure events' deliveries apart from the
// feed's (positive) and the firewall decisions' (-decision seq).
const exposureSeqBase = int64(1) << 40

// QueueExposureEvent records the report's event once (exposure_events'
// unique threat_id), then queues it, with its body, for every
// subscription that names exposure.found (and the report's ecosystem,
// when it has one), as RecordDecisions does.
func (s *Store) QueueExposureEvent(ctx context.Context, ev exposure.Event) (bool, error) {
	queued := false
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		row := exposureEventRow{ThreatID: ev.ThreatID, At: ev.At.UTC()}
		res, err := tx.NewInsert().Model(&row).On("CONFLICT (threat_id) DO NOTHING").Returning("id").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		if row.ID == 0 {
			if err := tx.NewSelect().Model(&row).Where("threat_id = ?", ev.ThreatID).Scan(ctx); err != nil {
				return err
			}
		}
		queued = true
		if err := queueEvent(ctx, tx, pushedEvent{seq: -(exposureSeqBase + row.ID), kind: exposure.EventFound, column: "on_exposure_found",
			threatID: ev.ThreatID, ecosystem: ev.Ecosystem, at: ev.At, body: ev.Body}); err != nil {
			return fmt.Errorf("queue exposure events: %w", err)
		}
		return nil
	})
	return queued, err
}

var _ exposure.Store = (*Store)(nil)

type feedMarkRow struct {
	bun.BaseModel `bun:"table:feed_marks"`

	Name string    `bun:"name,pk"`
	At   time.Time `bun:"at,notnull"`
}

// exposureMark names the exposure detector's row of feed_marks.
const exposureMark = "exposure"

// ExposureMark reads how far the exposure detector has looked (zero:
// never).
func (s *Store) ExposureMark(ctx context.Context) (time.Time, error) {
	var row feedMarkRow
	err := s.db.NewSelect().Model(&row).Where("name = ?", exposureMark).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	return row.At.UTC(), err
}

// MoveExposureMark moves the mark to at, never back (another daemon may
// have looked further).
func (s *Store) MoveExposureMark(ctx context.Context, at time.Time) error {
	row := feedMarkRow{Name: exposureMark, At: at.UTC()}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.NewInsert().Model(&row).On("CONFLICT (name) DO UPDATE").
			Set("at = CASE WHEN EXCLUDED.at > ?TableAlias.at THEN EXCLUDED.at ELSE ?TableAlias.at END").Exec(ctx)
		return err
	})
}
