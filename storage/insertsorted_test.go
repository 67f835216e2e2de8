package storage

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

// In a SQLite transaction insertSorted writes row by row through one
// prepared statement; it keeps the rows already there and the repeats of
// a batch, writes each row once, and a row that breaks another constraint
// (a report that does not exist) fails the call and, with it, the
// transaction.
func TestInsertSortedRowByRow(t *testing.T) {
	t.Parallel()
	s, ctx := migratedSQLite(t)
	recs := planRecords(3)
	if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs, Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := s.db.NewSelect().Table("threats").Column("id").Order("id").Scan(ctx, &ids); err != nil || len(ids) != 3 {
		t.Fatalf("reports: %v %v", ids, err)
	}
	keysOf := func() []indicatorRow {
		var got []indicatorRow
		if err := s.db.NewSelect().Model(&got).Where("key LIKE 'test-%'").Order("key", "threat_id").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		return got
	}
	write := func(rows []indicatorRow) error {
		return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return insertIndicators(ctx, tx, rows) })
	}
	if err := write([]indicatorRow{{Key: "test-b", ThreatID: ids[0]}}); err != nil {
		t.Fatal(err)
	}
	rows := []indicatorRow{{Key: "test-c", ThreatID: ids[2]}, {Key: "test-b", ThreatID: ids[0]}, {Key: "test-a", ThreatID: ids[1]},
		{Key: "test-c", ThreatID: ids[2]}, {Key: "test-b", ThreatID: ids[1]}}
	if err := write(rows); err != nil {
		t.Fatalf("rows already there and repeated: %v", err)
	}
	want := []indicatorRow{{Key: "test-a", ThreatID: ids[1]}, {Key: "test-b", ThreatID: ids[0]}, {Key: "test-b", ThreatID: ids[1]}, {Key: "test-c", ThreatID: ids[2]}}
	if got := keysOf(); !slices.Equal(got, want) {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	// A report that does not exist: the foreign key fails the call; the
	// row before it in the same transaction is rolled back with it.
	err := write([]indicatorRow{{Key: "test-d", ThreatID: ids[0]}, {Key: "test-e", ThreatID: "no-such-report"}})
	if err == nil {
		t.Fatal("a row naming no report was written")
	}
	if got := keysOf(); !slices.Equal(got, want) {
		t.Fatalf("after a failed write: rows %+v, want %+v", got, want)
	}
}

// BenchmarkInsertIndicators writes a batch of 1,200 indicators of random
// keys (an import's batch) into an index of about 600,000, in a transaction:
// row by row (insertIndicators) against one statement of every row (what
// it did before), the reference measured in the same run.
func BenchmarkInsertIndicators(b *testing.B) {
	s, ctx := migratedSQLite(b)
	recs := planRecords(50000)
	for part := range slices.Chunk(recs, 1000) {
		if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: part, Actor: "test"}); err != nil {
			b.Fatal(err)
		}
	}
	var ids []string
	if err := s.db.NewSelect().Table("threats").Column("id").Scan(ctx, &ids); err != nil {
		b.Fatal(err)
	}
	n := 0
	batch := func(size int) []indicatorRow {
		rows := make([]indicatorRow, size)
		for i := range rows {
			n++
			rows[i] = indicatorRow{Key: fmt.Sprintf("%x", sha256.Sum256([]byte(strconv.Itoa(n)))), ThreatID: ids[n%len(ids)]}
		}
		return rows
	}
	for range 500 {
		rows := batch(1200)
		if err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return insertIndicators(ctx, tx, rows) }); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []string{"row-by-row", "one-statement"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				rows := batch(1200)
				err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
					if mode == "row-by-row" {
						return insertIndicators(ctx, tx, rows)
					}
					slices.SortFunc(rows, func(a, b indicatorRow) int { return strings.Compare(a.Key, b.Key) })
					_, err := tx.NewInsert().Model(&rows).On("CONFLICT (key, threat_id) DO NOTHING").Returning("NULL").Exec(ctx)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// migratedSQLite opens a migrated SQLite store in a new file of tb's,
// closed when tb ends.
func migratedSQLite(tb testing.TB) (*Store, context.Context) {
	s, err := Open(SQLite, filepath.Join(tb.TempDir(), "threatd.db"), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	return s, ctx
}
