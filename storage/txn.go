package storage

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// txn collects the change-feed entries and published changes of one write
// transaction.
type txn struct {
	bun.Tx
	changes []changeRow
	feed    []feedEventRow
	// published are the indicators of the reports published in the
	// transaction (for their STIX object ids and the indicator look-up),
	// as the daemon derived and storage stored them (core.Derive);
	// unmapped names the published reports read without their details,
	// whose stored indicators writeIndicators reads.
	published []publishedIOCs
	unmapped  []string
}

// publishedIOCs are the indicators of a report published in a transaction;
// fresh when the report is new (it has no indicator rows to replace).
type publishedIOCs struct {
	threatID string
	iocs     []ioc.IOC
	fresh    bool
	// legacy: the report's STIX object ids are listed (core.STIXIDs).
	legacy bool
}

// publish queues a published change of a report (core.ChangeVerified, …),
// written at the end of the transaction with the change feed. A withdrawal
// (like a dispute and its end) changes no content: the report's STIX object ids and indicators were
// recorded when it was published, so they are not worked out again (the
// look-ups read verified reports only).
func (t *txn) publish(row *threatRow, kind string) {
	t.feed = append(t.feed, feedEventRow{ThreatID: row.ID, Registry: row.Registry, Kind: kind, Version: row.Version})
	switch {
	case kind == core.ChangeWithdrawn || kind == core.ChangeDisputed || kind == core.ChangeKept:
	case row.Details == nil:
		t.unmapped = append(t.unmapped, row.ID)
	default:
		t.published = append(t.published, publishedIOCs{threatID: row.ID, iocs: row.Details.IOCs, legacy: row.LegacySTIXIDs})
	}
}

// publishNew is publish for a new report whose indicators are known.
func (t *txn) publishNew(row *threatRow, kind string, iocs []ioc.IOC) {
	t.feed = append(t.feed, feedEventRow{ThreatID: row.ID, Registry: row.Registry, Kind: kind, Version: row.Version})
	t.published = append(t.published, publishedIOCs{threatID: row.ID, iocs: iocs, fresh: true, legacy: row.LegacySTIXIDs})
}

// objectRows adds the STIX object ids of the report threatID with these
// indicators of compromise, when they are listed (core.STIXIDs): derived
// ids need no row.
func objectRows(rows []stixObjectRow, threatID string, legacy bool, iocs []ioc.IOC) []stixObjectRow {
	ids := core.STIXIDsOf(threatID, legacy)
	if !ids.Listed() {
		return rows
	}
	for _, id := range ids.All(iocs) {
		rows = append(rows, stixObjectRow{ObjectID: id, ThreatID: threatID})
	}
	return rows
}

// indicatorRows adds the look-up rows of the report threatID's indicators
// (ioc.Searchable ones).
func indicatorRows(rows []indicatorRow, threatID string, iocs []ioc.IOC) []indicatorRow {
	for _, ind := range iocs {
		if ioc.Searchable(ind) {
			rows = append(rows, indicatorRow{Key: ioc.Key(ind.Type, ind.Value), ThreatID: threatID})
		}
	}
	return rows
}

// record queues a change-feed entry, written at the end of the transaction.
func (t *txn) record(e core.Entity, id, op string, at time.Time) {
	t.changes = append(t.changes, changeRow{Entity: string(e), EntityID: id, Op: op, At: at})
}

// write runs fn in one transaction and appends its change-feed entries last,
// under the feed lock, so that the feed's seq order is commit order. On
// SQLite, writes that queue up meanwhile share one transaction (see
// writeGroup).
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx *txn) error) error {
	if s.writer != nil {
		return s.writeGrouped(ctx, fn)
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, btx bun.Tx) error {
		tx := &txn{Tx: btx}
		if err := fn(ctx, tx); err != nil {
			return err
		}
		return s.appendChanges(ctx, tx)
	})
}

// appendChanges writes a transaction's change-feed entries and published
// changes, last, under the feed lock: their seq order is commit order. A
// published change's time is the later of the clock and the last one's, so
// that (at, seq) order is commit order too, whatever the clocks of the
// daemons sharing the database.
func (s *Store) appendChanges(ctx context.Context, tx *txn) error {
	if len(tx.changes) == 0 && len(tx.feed) == 0 {
		return nil
	}
	if err := lockFeed(ctx, s.dialect, tx.Tx); err != nil {
		return fmt.Errorf("lock change feed: %w", err)
	}
	if len(tx.changes) > 0 {
		// Returning("NULL"): the generated seqs are not read back.
		if _, err := tx.NewInsert().Model(&tx.changes).Returning("NULL").Exec(ctx); err != nil {
			return err
		}
	}
	if len(tx.feed) == 0 {
		return nil
	}
	at := s.now().UTC().Truncate(time.Microsecond)
	var last []time.Time
	if err := tx.NewSelect().Table("feed_events").Column("at").OrderExpr("at DESC, seq DESC").Limit(1).Scan(ctx, &last); err != nil {
		return fmt.Errorf("last published change: %w", err)
	}
	if len(last) == 1 && !last[0].Before(at) {
		at = last[0].UTC().Add(time.Microsecond)
	}
	// Every change has its own microsecond (TAXII's date_added): a client
	// that resumes after the last date it saw never skips the rest of an
	// import that shared a clock reading.
	for i := range tx.feed {
		tx.feed[i].At = at.Add(time.Duration(i) * time.Microsecond)
	}
	if _, err := tx.NewInsert().Model(&tx.feed).Returning("NULL").Exec(ctx); err != nil {
		return err
	}
	if err := queueWebhookEvents(ctx, tx.Tx, at); err != nil {
		return err
	}
	return s.writeIndicators(ctx, tx)
}

// writeIndicators records the STIX object ids (stix_objects) and the
// indicators (threat_indicators) of the reports published in tx: an object
// id already known is kept; a revised report's indicators replace its old
// ones.
func (s *Store) writeIndicators(ctx context.Context, tx *txn) error {
	if len(tx.unmapped) > 0 {
		var rows []threatRow
		if err := tx.NewSelect().Model(&rows).Relation("Details").Where("threat_row.id IN (?)", bun.List(tx.unmapped)).Scan(ctx); err != nil {
			return err
		}
		for _, r := range rows {
			if r.Details != nil {
				tx.published = append(tx.published, publishedIOCs{threatID: r.ID, iocs: r.Details.IOCs, legacy: r.LegacySTIXIDs})
			}
		}
	}
	var (
		objects    []stixObjectRow
		indicators []indicatorRow
		replaced   []string
	)
	for _, p := range tx.published {
		objects = objectRows(objects, p.threatID, p.legacy, p.iocs)
		indicators = indicatorRows(indicators, p.threatID, p.iocs)
		if !p.fresh {
			replaced = append(replaced, p.threatID)
		}
	}
	if err := insertObjectIDs(ctx, tx.Tx, objects); err != nil {
		return err
	}
	for chunk := range slices.Chunk(replaced, 500) {
		if _, err := tx.NewDelete().Model((*indicatorRow)(nil)).Where("threat_id IN (?)", bun.List(chunk)).Exec(ctx); err != nil {
			return fmt.Errorf("indicators: %w", err)
		}
	}
	return insertIndicators(ctx, tx.Tx, indicators)
}

// insertIndicators writes indicator rows, keeping those already there.
func insertIndicators(ctx context.Context, db bun.IDB, rows []indicatorRow) error {
	return insertSorted(ctx, db, rows, func(a, b indicatorRow) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.ThreatID, b.ThreatID))
	})
}

// insertObjectIDs writes object ids, keeping those already there.
func insertObjectIDs(ctx context.Context, db bun.IDB, rows []stixObjectRow) error {
	return insertSorted(ctx, db, rows, func(a, b stixObjectRow) int { return strings.Compare(a.ObjectID, b.ObjectID) })
}

// insertSorted writes rows of the model T, keeping the rows already there
// (ON CONFLICT on T's primary key DO NOTHING). The keys are hashes: sorted
// in the primary key's order first, the rows that share a page of the
// index are written one after the other.
//
// In a SQLite transaction each row is its own execution of one prepared
// statement. A statement that writes many rows and may fail midway (a
// conflict other than the key's, a foreign key) keeps a journal of every
// page it changes, to undo itself alone; rows of random keys change a page
// each, so a statement of 1,200 indicators copied 1,200 pages of the index
// before changing them (BenchmarkInsertIndicators, into about 600,000
// rows: 111-120 ms a batch as one statement, 56-59 ms row by row).
// Elsewhere (PostgreSQL: a round trip a statement) the rows go in
// statements of 2,000.
func insertSorted[T any](ctx context.Context, db bun.IDB, rows []T, order func(a, b T) int) error {
	if len(rows) == 0 {
		return nil
	}
	slices.SortFunc(rows, order)
	table := db.Dialect().Tables().Get(reflect.TypeFor[T]())
	names := func(fs []*schema.Field) string {
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = string(f.SQLName)
		}
		return strings.Join(out, ", ")
	}
	key := names(table.PKs)
	if tx, ok := db.(bun.Tx); ok && tx.Dialect().Name() == dialect.SQLite {
		stmt, err := tx.PrepareContext(ctx, "INSERT INTO "+string(table.SQLName)+" ("+names(table.Fields)+") VALUES ("+
			strings.TrimSuffix(strings.Repeat("?, ", len(table.Fields)), ", ")+") ON CONFLICT ("+key+") DO NOTHING")
		if err != nil {
			return fmt.Errorf("%s: %w", table.Name, err)
		}
		defer stmt.Close()
		args := make([]any, len(table.Fields))
		for i := range rows {
			v := reflect.ValueOf(&rows[i]).Elem()
			for j, f := range table.Fields {
				args[j] = f.Value(v).Interface()
			}
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("%s: %w", table.Name, err)
			}
		}
		return nil
	}
	for len(rows) > 0 {
		n := min(len(rows), 2000)
		batch := rows[:n]
		q := db.NewInsert().Model(&batch).On("CONFLICT (" + key + ") DO NOTHING").Returning("NULL")
		if _, err := q.Exec(ctx); err != nil {
			return fmt.Errorf("%s: %w", q.GetTableName(), err)
		}
		rows = rows[n:]
	}
	return nil
}
