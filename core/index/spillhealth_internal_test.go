package index

import (
	"context"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/storage/storagetest"
)

// TestSpillFullDisk: a spill file that cannot be written (a full disk:
// here /dev/full, which answers every write with ENOSPC) is reported once
// as what it is, retried later and later, shown by SpillFailure while it
// lasts, and checks stay right meanwhile (read from storage); once writes
// succeed again the recovery is reported and the failure cleared.
func TestSpillFullDisk(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("/dev/full: %v", err)
	}
	defer full.Close()
	spillRetryMin, spillRetryMax, spillReportEvery = 20*time.Millisecond, 80*time.Millisecond, time.Hour
	defer func() { spillRetryMin, spillRetryMax, spillReportEvery = time.Second, 5*time.Minute, 10*time.Minute }()

	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	name, reg := "disk-full-pkg", "npm"
	th := storagetest.NewReporter(t, st, "disk@example.com").Verified(t, reg, name, "")
	x := New(st, 16)
	if err := x.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := x.EnableSpill(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	defer x.CloseSpill()
	good := x.spill.cur.Load().f
	x.spill.cur.Load().f = full

	var mu sync.Mutex
	var failures []string
	recovered := make(chan struct{}, 1)
	fillCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go x.FillSpill(fillCtx, SpillHooks{
		Failed: func(err error, _ time.Duration) {
			mu.Lock()
			failures = append(failures, err.Error())
			mu.Unlock()
		},
		Recovered: func() { recovered <- struct{}{} },
	})
	deadline := time.Now().Add(10 * time.Second)
	for x.SpillFailure() == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // several retries at the pauses above
	why := x.SpillFailure()
	if !strings.Contains(why, syscall.ENOSPC.Error()) || !strings.Contains(why, "cannot write") || strings.Contains(why, "reading") {
		t.Fatalf("SpillFailure = %q, want the write failure named", why)
	}
	mu.Lock()
	n := len(failures)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d failures reported (%v), want one: it is reported when it starts, not at every retry", n, failures)
	}
	r, err := x.CheckQuery(ctx, core.CheckQuery{ReportType: core.TypePackage, ResourceIdentifier: name, Ecosystem: reg})
	if err != nil || r.Count != 1 || r.Answer != nil || r.Latest.ID != th.ID {
		t.Fatalf("a check while the disk is full: %+v %v, want the report read from storage", r, err)
	}
	// Room again.
	sp := x.spill.cur.Load()
	sp.mu.Lock()
	sp.f = good
	sp.mu.Unlock()
	select {
	case <-recovered:
	case <-time.After(10 * time.Second):
		t.Fatal("no recovery reported after the file could be written again")
	}
	if x.SpillFailure() != "" {
		t.Fatalf("SpillFailure after recovery: %q", x.SpillFailure())
	}
}
