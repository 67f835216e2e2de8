package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/storage/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

func openPG(t *testing.T) *Store {
	t.Helper()
	st, err := Open(Postgres, pgtest.Server(t).Database(t, t.Name()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

func rawChange(t *testing.T, st *Store, lock bool) (commit func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := st.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lock {
		if err := lockFeed(ctx, st.dialect, tx); err != nil {
			t.Fatal(err)
		}
	}
	row := changeRow{Entity: "user", EntityID: uuid.NewString(), Op: "create", At: time.Now()}
	if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSequenceOrderIsNotCommitOrderWithoutTheLock shows the hazard the feed
// lock exists for: on PostgreSQL a later sequence value can commit first.
func TestSequenceOrderIsNotCommitOrderWithoutTheLock(t *testing.T) {
	st := openPG(t)
	ctx := context.Background()
	commitFirst := rawChange(t, st, false) // takes seq 1, not committed
	commitSecond := rawChange(t, st, false)
	commitSecond() // seq 2 commits first
	seen, err := st.Changes(ctx, core.ChangeQuery{After: 0, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Seq != 2 {
		t.Fatalf("expected only seq 2 visible, got %+v", seen)
	}
	// A follower now at seq 2 would never read seq 1:
	commitFirst()
	if later, _ := st.Changes(ctx, core.ChangeQuery{After: seen[0].Seq, Limit: 10}); len(later) != 0 {
		t.Fatalf("unexpected %+v", later)
	}
}

// TestFeedLockMakesCommitOrder commits out of sequence order through the
// real write path and shows that a follower misses nothing: while an earlier
// writer holds its sequence value uncommitted, a later writer cannot take
// one, so the reader never sees a later change before an earlier one.
func TestFeedLockMakesCommitOrder(t *testing.T) {
	st := openPG(t)
	ctx := context.Background()
	commitFirst := rawChange(t, st, true) // holds the feed lock with seq 1 uncommitted

	created := make(chan core.User, 1)
	go func() {
		u, err := st.CreateUser(ctx, core.User{ID: uuid.NewString(), Email: "late@example.com", Name: "late", Tier: core.TierFree, Role: core.RoleSubmitter})
		if err != nil {
			t.Error(err)
		}
		created <- u
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case <-created:
		t.Fatal("a second writer committed a change while an earlier one held its sequence value")
	default:
	}
	if seen, _ := st.Changes(ctx, core.ChangeQuery{After: 0, Limit: 10}); len(seen) != 0 {
		t.Fatalf("a follower sees %+v before the earlier writer committed", seen)
	}
	commitFirst()
	u := <-created
	seen, err := st.Changes(ctx, core.ChangeQuery{After: 0, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0].Seq >= seen[1].Seq || seen[1].EntityID != u.ID {
		t.Fatalf("feed %+v: want the held change first, then the user's", seen)
	}
}

// openMigrated opens a migrated store of dialect d: a fresh SQLite file, or
// a fresh database on the tests' PostgreSQL server.
func openMigrated(t *testing.T, d Dialect) *Store {
	t.Helper()
	if d == Postgres {
		return openPG(t)
	}
	s, err := Open(SQLite, filepath.Join(t.TempDir(), "threatd.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// runMigration runs the migration named name once more, as bun's migrator
// runs it.
func runMigration(t *testing.T, s *Store, name string) {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, mg := range ms.Sorted() {
		if mg.Name == name {
			if err := mg.Up(context.Background(), s.migrator(ms), &mg); err != nil {
				t.Fatalf("migration %s: %v", name, err)
			}
			return
		}
	}
	t.Fatalf("no migration %s", name)
}
