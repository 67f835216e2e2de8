package sqliteplugin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/storage"
)

// The integrity check's child process, the real plugin binary run as
// threatd-storage-sqlite quick-check <file>: a sound database is sound,
// a damaged page is found and told apart from a check that could not run,
// and a check whose context ends is stopped at once.
func TestQuickCheckInChild(t *testing.T) {
	t.Parallel()
	exe := filepath.Join(testbin.PluginDir(t), "threatd-storage-sqlite")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "check.db")
	s, err := storage.Open(storage.SQLite, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	acc := core.NewAccounts(s)
	for i := range 200 {
		if _, err := acc.AddUser(ctx, core.NewUser{Email: fmt.Sprintf("user-%03d@example.com", i), Name: fmt.Sprintf("%03d %s", i, bytes.Repeat([]byte{'x'}, 90))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if problems, err := runChild(ctx, exe, path); err != nil || len(problems) != 0 {
		t.Fatalf("sound file: %q %v", problems, err)
	}
	if _, err := runChild(ctx, exe, filepath.Join(t.TempDir(), "missing", "x.db")); err == nil || storage.IsCorruptError(err) {
		t.Fatalf("a file that cannot be opened: %v, want an error that is not damage", err)
	}
	// A small database is checked in the plugin's own process.
	if _, err := checkInChild(ctx, path); err != storage.ErrCheckHere {
		t.Fatalf("a small database: %v, want ErrCheckHere", err)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := len(raw) / 2 / 4096 * 4096
	copy(raw[page:], bytes.Repeat([]byte{0xff}, 4096))
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	problems, err := runChild(ctx, exe, path)
	if err == nil && len(problems) == 0 {
		t.Fatal("a damaged page: the child found nothing")
	}
	if err != nil && !storage.IsCorruptError(err) {
		t.Fatalf("a damaged page: %v, want the damage (IsCorruptError)", err)
	}

	stopped, cancel := context.WithCancel(ctx)
	cancel()
	start := time.Now()
	if _, err := runChild(stopped, exe, path); err == nil {
		t.Fatal("a check whose context had ended ran")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a cancelled check took %s", took)
	}
}
