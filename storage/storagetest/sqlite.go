package storagetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/threatd/threatd/storage"
)

// OpenSQLite returns a migrated SQLite store in a temporary file, closed at
// the end of the test: the real store, in process, for tests of the
// packages above it.
func OpenSQLite(t testing.TB) *storage.Store {
	t.Helper()
	st, err := storage.Open(storage.SQLite, filepath.Join(t.TempDir(), "threatd.db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}
