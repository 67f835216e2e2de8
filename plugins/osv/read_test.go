package osv

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// osvArchive writes n minimal OSV records into a zip, plus one entry that
// is not OSV at position bad.
func osvArchive(t *testing.T, n, bad int) string {
	return writeZip(t, n, zip.Deflate, func(i int) (string, string) {
		name := fmt.Sprintf("MAL-T-%04d.json", i)
		if i == bad {
			return name, `{"id": 12`
		}
		return name, fmt.Sprintf(`{"id":"MAL-T-%04d","published":"2024-01-01T00:00:00Z","modified":"2024-01-02T00:00:00Z","summary":"Malicious code in pkg-%04d",
			"affected":[{"package":{"ecosystem":"npm","name":"pkg-%04d"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}]}]}`, i, i, i)
	})
}

// Records come out in archive order although parsed in parallel; a bad
// entry is skipped in its place; progress counts every entry.
func TestReadOrderAndSkips(t *testing.T) {
	const n = 600
	path := osvArchive(t, n, 250)
	var got []string
	var skipped []string
	last := core.SourceItem{}
	err := Source{Now: func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }}.Read(context.Background(), []string{path}, nil, nil, func(it core.SourceItem) error {
		switch {
		case it.Record != nil:
			got = append(got, it.Record.Threat.UpstreamID)
		case it.Skipped != "":
			skipped = append(skipped, fmt.Sprintf("%s after %d", it.Skipped, len(got)))
		default:
			last = it
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n-1 || len(skipped) != 1 || skipped[0] != path+"!MAL-T-0250.json after 250" {
		t.Fatalf("%d records, skipped %q", len(got), skipped)
	}
	for i, id := range got {
		want := i
		if i >= 250 {
			want = i + 1
		}
		if id != fmt.Sprintf("MAL-T-%04d", want) {
			t.Fatalf("record %d is %s", i, id)
		}
	}
	if last.FilesDone != n || last.FilesTotal != n {
		t.Fatalf("last progress %+v", last)
	}
}

// The caller's error ends the run at once and is returned; so does
// cancellation. Neither hangs on the parallel readers.
func TestReadStops(t *testing.T) {
	path := osvArchive(t, 600, -1)
	stop := errors.New("enough")
	seen := 0
	err := Source{}.Read(context.Background(), []string{path}, nil, nil, func(it core.SourceItem) error {
		if it.Record != nil {
			if seen++; seen == 10 {
				return stop
			}
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 10 {
		t.Fatalf("err %v after %d records", err, seen)
	}
	ctx, cancel := context.WithCancel(context.Background())
	seen = 0
	err = Source{}.Read(ctx, []string{path}, nil, nil, func(it core.SourceItem) error {
		if it.Record != nil {
			if seen++; seen == 10 {
				cancel()
			}
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || seen > 10+256 {
		t.Fatalf("err %v after %d records", err, seen)
	}
}

// knownArchive writes n records, every third with two affected packages,
// and a broken entry at position bad.
func knownArchive(t *testing.T, n, bad int) string {
	return writeZip(t, n, zip.Deflate, func(i int) (string, string) { return knownEntry(i, bad) })
}

// knownEntry is entry i of knownArchive.
func knownEntry(i, bad int) (string, string) {
	name := fmt.Sprintf("MAL-T-%04d.json", i)
	if i == bad {
		return name, `{"id": 12`
	}
	affected := fmt.Sprintf(`{"package":{"ecosystem":"npm","name":"pkg-%04d"},"versions":["1.0.0"]}`, i)
	if i%3 == 0 {
		affected += fmt.Sprintf(`,{"package":{"ecosystem":"PyPI","name":"pkg-%04d-b"},"versions":["2.0.0"]}`, i)
	}
	return name, fmt.Sprintf(`{"id":"MAL-T-%04d","published":"2024-01-01T00:00:00Z","modified":"2024-01-02T00:00:00Z","summary":"Malicious code in pkg-%04d","affected":[%s]}`, i, i, affected)
}

// readAllItems reads path with known and returns every item.
func readAllItems(t *testing.T, path string, known core.Known) []core.SourceItem {
	t.Helper()
	return readItems(t, "", path, known)
}

// readItems is readAllItems with a head cache in cacheDir ("": none).
func readItems(t *testing.T, cacheDir, path string, known core.Known) []core.SourceItem {
	t.Helper()
	var items []core.SourceItem
	err := Source{Now: func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }, CacheDir: cacheDir}.Read(context.Background(), []string{path}, nil, known, func(it core.SourceItem) error {
		items = append(items, it)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// With known, a record the store already has is yielded as unchanged (one
// per import record it maps to) without being decoded; the heads asked
// about name the records exactly as Map does; everything else comes out
// as without known, in the same order.
func TestReadKnown(t *testing.T) {
	const n = 600
	path := knownArchive(t, n, 250)
	plain := readAllItems(t, path, nil)
	// The upstream ids and modified time of each record, as Map names them.
	idsOf := map[string][]string{}
	for _, it := range plain {
		if r := it.Record; r != nil {
			file := strings.SplitN(r.Threat.UpstreamID, "/", 2)[0]
			idsOf[file] = append(idsOf[file], r.Threat.UpstreamID)
			if !r.Threat.UpstreamModified.Equal(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)) {
				t.Fatalf("%s modified %v", r.Threat.UpstreamID, r.Threat.UpstreamModified)
			}
		}
	}
	if len(idsOf) != n-1 {
		t.Fatalf("%d records read without known", len(idsOf))
	}

	// Known: all but every tenth record (heads are read while most of a
	// window is known).
	isKnown := func(k int) bool { return k%10 != 0 }
	asked := 0
	known := func(_ context.Context, recs []core.UpstreamVersion) ([]bool, error) {
		out := make([]bool, len(recs))
		for i, r := range recs {
			asked++
			id := strings.SplitN(r.IDs[0], "/", 2)[0]
			if r.Source != SourceName || !slices.Equal(r.IDs, idsOf[id]) || !r.Modified.Equal(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)) {
				return nil, fmt.Errorf("asked about %+v; Map names it %v", r, idsOf[id])
			}
			var k int
			fmt.Sscanf(id, "MAL-T-%d", &k)
			out[i] = isKnown(k)
		}
		return out, nil
	}
	got := readAllItems(t, path, known)
	if asked != n-1 {
		t.Fatalf("asked about %d records, want %d (the broken one has no head)", asked, n-1)
	}
	// Expected: plain, with the known records' import records replaced by
	// one unchanged item each.
	var want []core.SourceItem
	wantUnchanged := 0
	for i := 0; i < len(plain); i++ {
		it := plain[i]
		if r := it.Record; r != nil {
			var k int
			fmt.Sscanf(r.Threat.UpstreamID, "MAL-T-%d", &k)
			if isKnown(k) {
				ids := idsOf[fmt.Sprintf("MAL-T-%04d", k)]
				want = append(want, core.SourceItem{Unchanged: len(ids)})
				wantUnchanged += len(ids)
				i += len(ids) - 1
				continue
			}
		}
		want = append(want, it)
	}
	// A run of unchanged records comes as one count and its progress.
	if !reflect.DeepEqual(coalesce(got), coalesce(want)) || len(got) >= len(want)/2 {
		t.Fatalf("with known: %d items (%d coalesced), want %d (%d)", len(got), len(coalesce(got)), len(want), len(coalesce(want)))
	}
	unchanged := 0
	for _, it := range got {
		unchanged += it.Unchanged
	}
	if unchanged != wantUnchanged || wantUnchanged < 700 {
		t.Fatalf("%d unchanged import records, want %d", unchanged, wantUnchanged)
	}

	// Known of nothing: exactly the plain read.
	none := func(_ context.Context, recs []core.UpstreamVersion) ([]bool, error) {
		return make([]bool, len(recs)), nil
	}
	if got := readAllItems(t, path, none); !reflect.DeepEqual(got, plain) {
		t.Fatalf("known of nothing: %d items, want %d", len(got), len(plain))
	}

	// A failing known ends the read with its error.
	fail := errors.New("store down")
	err := Source{}.Read(context.Background(), []string{path}, nil, func(context.Context, []core.UpstreamVersion) ([]bool, error) { return nil, fail }, func(core.SourceItem) error { return nil })
	if !errors.Is(err, fail) {
		t.Fatalf("failing known: %v", err)
	}
}

// coalesce merges each run of unchanged counts, each followed by its
// progress, into one count followed by the last progress.
func coalesce(items []core.SourceItem) []core.SourceItem {
	var out []core.SourceItem
	for _, it := range items {
		n := len(out)
		if it.Unchanged > 0 && n >= 2 && out[n-2].Unchanged > 0 && out[n-1] == (core.SourceItem{FilesDone: out[n-1].FilesDone, FilesTotal: out[n-1].FilesTotal}) {
			out[n-2].Unchanged += it.Unchanged
			out = out[:n-1]
			continue
		}
		out = append(out, it)
	}
	return out
}

// Heads are read while at least half of a window is known; after a window
// of mostly new records only one window in probeEvery reads them.
func TestHeadMode(t *testing.T) {
	var m headMode
	m.on.Store(true)
	m.observe(256, 128)
	if !m.on.Load() {
		t.Fatal("off after a half-known window")
	}
	m.observe(256, 127)
	if m.on.Load() {
		t.Fatal("on after a mostly new window")
	}
	for i := 1; i < probeEvery; i++ {
		if m.observe(0, 0); m.on.Load() {
			t.Fatalf("probing after %d windows", i)
		}
	}
	if m.observe(0, 0); !m.on.Load() {
		t.Fatalf("not probing after %d windows", probeEvery)
	}
	m.observe(10, 9)
	if !m.on.Load() {
		t.Fatal("off after a known probe window")
	}
}

// While the source waits for a window's answer, the workers read ahead,
// at most readAheadBytes of the entries' stated sizes: records of nearly
// 4 MiB are not read by the hundred.
func TestReadAheadIsBoundedByBytes(t *testing.T) {
	const n = 40
	details := strings.Repeat("x", maxRecordBytes-1024)
	path := writeZip(t, n, zip.Deflate, func(i int) (string, string) {
		return fmt.Sprintf("MAL-B-%04d.json", i), fmt.Sprintf(`{"id":"MAL-B-%04d","modified":"2024-01-02T00:00:00Z","details":%q,
			"affected":[{"package":{"ecosystem":"npm","name":"big-%04d"},"versions":["1.0.0"]}]}`, i, details, i)
	})
	before := contentsRead.Load()
	var readAtFirst int64 = -1
	known := func(_ context.Context, recs []core.UpstreamVersion) ([]bool, error) {
		if readAtFirst < 0 {
			// The first window is full at windowBytes; let the workers
			// read ahead all they may.
			time.Sleep(500 * time.Millisecond)
			readAtFirst = contentsRead.Load() - before
		}
		out := make([]bool, len(recs))
		for i := range out {
			out[i] = true
		}
		return out, nil
	}
	unchanged := 0
	err := Source{}.Read(context.Background(), []string{path}, nil, known, func(it core.SourceItem) error {
		unchanged += it.Unchanged
		return nil
	})
	if err != nil || unchanged != n {
		t.Fatalf("%d unchanged: %v", unchanged, err)
	}
	// The window (windowBytes: 3 records), what the read-ahead holds
	// (readAheadBytes: 8), and one a worker may have begun.
	window := windowBytes/(maxRecordBytes-1024) + 1
	if most := int64(window + readAheadBytes/(maxRecordBytes-1024) + 2); readAtFirst > most || readAtFirst < int64(window) {
		t.Fatalf("%d records read while the first window waited, want %d to %d", readAtFirst, window, most)
	}
}
