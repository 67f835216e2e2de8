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
	// rows returns a pointer to an empty slice of the table's model, row a
	// pointer to a new row.
	rows func() any
	row  func() any
	// replace, when set, is the ON CONFLICT … DO UPDATE clause that lets a
	// copied row replace one the target made itself (bun sets every
	// column from the copied row).
	replace string
}

// table describes the table of model R.
func table[R any](name, order, replace string) copyTable {
	return copyTable{name: name, order: order, replace: replace,
		rows: func() any { return &[]R{} }, row: func() any { return new(R) }}
}

var copyTables = []copyTable{
	table[userRow]("users", "id", ""),
	table[tokenRow]("api_tokens", "id", ""),
	table[threatRow]("threats", "id", ""),
	table[detailsRow]("threat_details", "threat_id", ""),
	table[revisionRow]("threat_revisions", "id", ""),
	table[eventRow]("review_events", "id", ""),
	table[changeRow]("changes", "seq", ""),
	table[feedEventRow]("feed_events", "seq", ""),
	table[stixObjectRow]("stix_objects", "object_id", ""),
	table[indicatorRow]("threat_indicators", "key, threat_id", ""),
	// The secret that signs feed cursors: cursors given out before the
	// copy keep working after it, even when the target served requests
	// before and made its own.
	table[secretRow]("secrets", "name", "CONFLICT (name) DO UPDATE"),
	table[usageRow]("paid_usage", "day, token_id, endpoint", ""),
	table[webhookRow]("webhooks", "id", ""),
	table[deliveryRow]("webhook_deliveries", "webhook_id, seq", ""),
	table[attemptRow]("webhook_attempts", "id", ""),
	table[payloadRow]("webhook_payloads", "seq", ""),
	table[waiverRow]("firewall_waivers", "id", ""),
	table[decisionRow]("firewall_decisions", "seq", ""),
	table[heldRow]("firewall_held", "ecosystem, name, version", ""),
	table[sightingRow]("sightings", "id", ""),
	table[sightingCountRow]("sighting_counts", "threat_id", ""),
	table[reputationRow]("reputation_events", "id", ""),
	table[campaignRow]("campaigns", "id", ""),
	table[campaignThreatRow]("campaign_threats", "campaign_id, threat_id", ""),
	table[ruleIDRow]("rule_ids", "number", ""),
	table[imagePinRow]("image_pins", "threat_id, digest", ""),
	table[analysisRow]("analyses", "ecosystem, name, version", ""),
	table[ledgerRow]("firewall_ledger", "ecosystem, name, version, token_id, client_ip, day", ""),
	table[inventoryRow]("inventories", "project", ""),
	table[inventoryItemRow]("inventory_items", "project, ecosystem, name, version", ""),
	table[exposureRow]("exposures", "id", ""),
	table[exposureEventRow]("exposure_events", "id", ""),
}

// exportBudget bounds one exported batch (a stream message), far below
// gRPC's 4 MiB.
const exportBudget = 1 << 20

// Export calls fn with every row of every table, as JSON arrays of at most
// about exportBudget bytes, tables in foreign-key order. Each table is one
// ordered read, rows decoded as they arrive: the time is linear in the rows
// and the memory one batch, whatever the size of the store.
func (s *Store) Export(ctx context.Context, fn func(table string, rows []byte) error) error {
	for _, t := range copyTables {
		if err := s.exportTable(ctx, t, fn); err != nil {
			return fmt.Errorf("export %s: %w", t.name, err)
		}
	}
	return nil
}

func (s *Store) exportTable(ctx context.Context, t copyTable, fn func(string, []byte) error) error {
	rows, err := s.db.NewSelect().Model(t.rows()).OrderExpr(t.order).Rows(ctx)
	if err != nil {
		return err
	}
	defer rows.Close()
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
		batch, size = batch[:0], 0
		return fn(t.name, b)
	}
	for rows.Next() {
		row := t.row()
		if err := s.db.ScanRow(ctx, rows, row); err != nil {
			return err
		}
		item, err := json.Marshal(row)
		if err != nil {
			return err
		}
		if size+len(item) > exportBudget {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, item)
		size += len(item) + 1
	}
	if err := rows.Err(); err != nil {
		return err
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
			ins := tx.NewInsert().Model(dst)
			if t.replace != "" {
				ins = ins.On(t.replace)
			}
			res, err := ins.Exec(ctx)
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
