package storage

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/threatd/threatd/core"
)

// QuickCheckFile, the SQLite plugin's child process's check, finds a
// sound file sound, and a file it cannot open is not taken for damage
// (IsCorruptError). A damaged page: cmd/internal/sqliteplugin's
// TestQuickCheckInChild, through the child.
func TestQuickCheckFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "check.db")
	s, err := Open(SQLite, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	recs := planRecords(300)
	if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs, Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	if problems, err := QuickCheckFile(ctx, path); err != nil || len(problems) != 0 {
		t.Fatalf("sound file: %q %v", problems, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := QuickCheckFile(ctx, filepath.Join(t.TempDir(), "missing", "x.db")); err == nil || IsCorruptError(err) {
		t.Fatalf("a file that cannot be opened: %v, want an error that is not damage", err)
	}
}
