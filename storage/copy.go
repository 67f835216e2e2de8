package storage

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/uptrace/bun"
)

// copyTable describes one table for copy-storage, in foreign-key order.
type copyTable struct {
	name  string
	order string
	// rows returns a pointer to an empty slice of the table's model.
	rows func() any
}

var copyTables = []copyTable{
	{"users", "id", func() any { return &[]userRow{} }},
	{"api_tokens", "id", func() any { return &[]tokenRow{} }},
	{"threats", "id", func() any { return &[]threatRow{} }},
	{"threat_details", "threat_id", func() any { return &[]detailsRow{} }},
	{"threat_revisions", "id", func() any { return &[]revisionRow{} }},
	{"review_events", "id", func() any { return &[]eventRow{} }},
	{"changes", "seq", func() any { return &[]changeRow{} }},
	{"feed_events", "seq", func() any { return &[]feedEventRow{} }},
}

// exportPage is how many rows are read at once; exportBudget bounds one
// exported batch (a stream message), far below gRPC's 4 MiB.
const (
	exportPage   = 200
	exportBudget = 1 << 20
)

// Export calls fn with every row of every table, as JSON arrays of at most
// about exportBudget bytes, tables in foreign-key order.
func (s *Store) Export(ctx context.Context, fn func(table string, rows []byte) error) error {
	for _, t := range copyTables {
		for offset := 0; ; offset += exportPage {
			page := t.rows()
			err := s.db.NewSelect().Model(page).OrderExpr(t.order + " ASC").Limit(exportPage).Offset(int64(offset)).Scan(ctx)
			if err != nil {
				return fmt.Errorf("export %s: %w", t.name, err)
			}
			raw, err := json.Marshal(page)
			if err != nil {
				return err
			}
			var items []json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil {
				return err
			}
			if len(items) == 0 {
				break
			}
			if err := sendBatches(t.name, items, fn); err != nil {
				return err
			}
			if len(items) < exportPage {
				break
			}
		}
	}
	return nil
}

// sendBatches groups rows into JSON arrays of at most exportBudget bytes.
func sendBatches(table string, items []json.RawMessage, fn func(string, []byte) error) error {
	var batch []json.RawMessage
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		b, err := json.Marshal(batch)
		if err != nil {
			return err
		}
		batch, size = nil, 0
		return fn(table, b)
	}
	for _, it := range items {
		if size+len(it) > exportBudget {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, it)
		size += len(it) + 1
	}
	return flush()
}

// Import writes exported batches into this store in one transaction: all of
// them or nothing. next returns the following batch, or ok=false at the end.
// The store must be empty of users, tokens and reports.
func (s *Store) Import(ctx context.Context, next func() (table string, rows []byte, ok bool, err error)) (map[string]int64, error) {
	counts := map[string]int64{}
	unlock, err := s.writeTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var existing int
		if err := tx.NewRaw(`SELECT (SELECT count(*) FROM users) + (SELECT count(*) FROM api_tokens) + (SELECT count(*) FROM threats)`).Scan(ctx, &existing); err != nil {
			return err
		}
		if existing > 0 {
			return fmt.Errorf("the target storage is not empty (%d users, tokens and reports): copy-storage only fills an empty database", existing)
		}
		for {
			table, rows, ok, err := next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			t, found := findCopyTable(table)
			if !found {
				return fmt.Errorf("import: unknown table %q", table)
			}
			dst := t.rows()
			if err := json.Unmarshal(rows, dst); err != nil {
				return fmt.Errorf("import %s: %w", table, err)
			}
			res, err := tx.NewInsert().Model(dst).Exec(ctx)
			if err != nil {
				return fmt.Errorf("import %s: %w", table, err)
			}
			n, _ := res.RowsAffected()
			counts[table] += n
		}
		// Continue the change feed after the copied sequence numbers.
		return resetFeedSequence(ctx, s.dialect, tx)
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

func findCopyTable(name string) (copyTable, bool) {
	for _, t := range copyTables {
		if t.name == name {
			return t, true
		}
	}
	return copyTable{}, false
}
