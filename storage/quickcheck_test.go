package storage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/threatd/threatd/core"
)

// QuickCheckFile, the SQLite plugin's child process's check, finds a
// sound file sound and a damaged one damaged, with the damage told apart
// from a check that could not run (IsCorruptError).
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

	// Overwrite the middle of the file, past the schema: the pages there
	// hold reports and their indexes.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := len(raw) / 2 / 4096 * 4096
	copy(raw[page:], bytes.Repeat([]byte{0xff}, 4096))
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	problems, err := QuickCheckFile(ctx, path)
	if err == nil && len(problems) == 0 {
		t.Fatal("a damaged page: the check found nothing")
	}
	if err != nil && !IsCorruptError(err) {
		t.Fatalf("a damaged page: %v, want the damage (IsCorruptError)", err)
	}
}
