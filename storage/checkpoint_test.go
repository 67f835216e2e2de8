package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// Commits never checkpoint on SQLite (wal_autocheckpoint is off); the
// background loop does, so the WAL is reused instead of growing with every
// write, and Close leaves it empty.
func TestSQLiteBackgroundCheckpoints(t *testing.T) {
	defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
	checkpointEvery = 20 * time.Millisecond
	path := filepath.Join(t.TempDir(), "wal.db")
	s, err := Open(SQLite, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	recs := planRecords(3000)
	var written, most int64
	for i := 0; i < len(recs); i += 100 {
		if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs[i : i+100], Actor: "test"}); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		written += 100
		most = max(most, st.Size())
		time.Sleep(50 * time.Millisecond)
	}
	db, _ := os.Stat(path)
	// 3,000 reports make a database of db.Size() bytes; without
	// checkpoints the WAL would hold every page written, several times it.
	if most > db.Size() {
		t.Fatalf("WAL grew to %d bytes for a %d-byte database: not checkpointed", most, db.Size())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path + "-wal"); err == nil && st.Size() != 0 {
		t.Fatalf("WAL of %d bytes left at Close", st.Size())
	}
	s2, err := Open(SQLite, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if st, err := s2.Stats(ctx); err != nil || st.Threats != written {
		t.Fatalf("after reopening: %+v %v, want %d reports", st, err, written)
	}
}

// A daemon's store on a new file runs its first quick_check while the
// migration creates the tables: both connections used to switch the new file
// to WAL together, and one failed at once with SQLITE_BUSY ("migrate: init:
// database is locked").
func TestNewSQLiteFileOpensUnderConcurrentConnections(t *testing.T) {
	ctx := context.Background()
	for i := range 40 {
		path := filepath.Join(t.TempDir(), "new.db")
		s, err := Open(SQLite, path, Options{IntegrityEvery: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		var mode string
		if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Fatalf("run %d: journal mode %q %v", i, mode, err)
		}
		s.Close()
	}
}

// Writes that follow each other without a pause (an import) still get
// the WAL restarted: once it holds walRestartFrames, the checkpoint takes
// the writer turn, so the WAL stays near that size instead of holding
// every page the writes made (10 GB beside a 2.7 GB database at a million
// reports).
func TestSQLiteWALBoundedUnderBackToBackWrites(t *testing.T) {
	defer func(d time.Duration, f int) { checkpointEvery, walRestartFrames = d, f }(checkpointEvery, walRestartFrames)
	checkpointEvery, walRestartFrames = 10*time.Millisecond, 256 // 1 MiB
	path := filepath.Join(t.TempDir(), "wal.db")
	s, err := Open(SQLite, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	recs := planRecords(6000)
	var most int64
	for i := 0; i < len(recs); i += 50 {
		if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs[i : i+50], Actor: "test"}); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path + "-wal"); err == nil {
			most = max(most, st.Size())
		}
	}
	db, _ := os.Stat(path)
	t.Logf("WAL peak %d bytes, database %d bytes", most, db.Size())
	// Without the restart it reaches five times the database here.
	if most > db.Size() {
		t.Fatalf("WAL grew to %d bytes beside a %d-byte database under back-to-back writes", most, db.Size())
	}
}
