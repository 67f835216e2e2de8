package osv

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// readCached reads path with known and a head cache in dir, and returns
// every item, the heads known was asked about, and how many entries'
// contents were read.
func readCached(t *testing.T, dir, path string, known core.Known) (items []core.SourceItem, asked []core.UpstreamVersion, read int64) {
	t.Helper()
	ask := func(ctx context.Context, recs []core.UpstreamVersion) ([]bool, error) {
		asked = append(asked, recs...)
		return known(ctx, recs)
	}
	before := contentsRead.Load()
	items = readItems(t, dir, path, ask)
	return items, asked, contentsRead.Load() - before
}

// knownAt answers as a store holding records MAL-T-k for k%10 != 0 at the
// time given.
func knownAt(at time.Time) core.Known {
	return func(_ context.Context, recs []core.UpstreamVersion) ([]bool, error) {
		out := make([]bool, len(recs))
		for i, r := range recs {
			var k int
			fmt.Sscanf(r.IDs[0], "MAL-T-%d", &k)
			out[i] = k%10 != 0 && r.Modified.Equal(at)
		}
		return out, nil
	}
}

func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "osv-heads-*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A re-import takes the heads of the entries it read before from the
// cache, reads only the contents of the records the store does not have,
// and yields exactly what a read without the cache yields; a changed entry
// is read again; a damaged cache file is read as none and written anew; a
// run that stops early leaves the file as it was.
func TestHeadCache(t *testing.T) {
	// contentsRead counts across the package: no parallel tests here.
	// Windows of 1,000: several, so that a first import decodes some
	// records in full without asking about their heads.
	const n = 3000
	path := knownArchive(t, n, 250)
	dir := t.TempDir()
	at := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	known := knownAt(at)
	want := readAllItems(t, path, known)

	// A first import: the store has nothing, so after the first window
	// records are decoded in full without their heads being asked about;
	// their heads are kept all the same.
	none := func(_ context.Context, recs []core.UpstreamVersion) ([]bool, error) {
		return make([]bool, len(recs)), nil
	}
	plain := readAllItems(t, path, nil)
	first, asked1, read1 := readCached(t, dir, path, none)
	if !reflect.DeepEqual(first, plain) || read1 != n || len(asked1) == n-1 {
		t.Fatalf("first run: %d items (want %d), %d contents read (want %d), %d heads asked about", len(first), len(plain), read1, n, len(asked1))
	}
	if files := cacheFiles(t, dir); len(files) != 1 || !strings.HasSuffix(files[0], ".bin") {
		t.Fatalf("cache files after the first run: %q", files)
	}
	// The re-import asks about the same heads as one without the cache.
	_, asked, _ := readCached(t, t.TempDir(), path, known)
	second, asked2, read2 := readCached(t, dir, path, known)
	if !reflect.DeepEqual(second, want) {
		t.Fatalf("second run: %d items, want %d", len(second), len(want))
	}
	if !reflect.DeepEqual(asked2, asked) {
		t.Fatalf("second run asked about %d heads, a run without the cache about %d (or not the same)", len(asked2), len(asked))
	}
	// Read: the records the store lacks (k%10 == 0, but 250) and the
	// broken entry 250, which has no head.
	if read2 != n/10 {
		t.Fatalf("second run read %d contents, want %d", read2, n/10)
	}
	// A store that has nothing: every cached head is read after all, and
	// the items are those of a plain read.
	if got, _, read := readCached(t, dir, path, none); !reflect.DeepEqual(got, plain) || read != n {
		t.Fatalf("known of nothing: %d items, %d contents read", len(got), read)
	}

	// The archive downloaded again, with one record modified.
	changed := writeZipAt(t, path, n, zip.Deflate, func(i int) (string, string) {
		name, content := knownEntry(i, 250)
		if i == 7 {
			content = strings.Replace(content, `"modified":"2024-01-02T00:00:00Z"`, `"modified":"2024-01-03T00:00:00Z"`, 1)
		}
		return name, content
	})
	if changed != path {
		t.Fatal("the archive moved")
	}
	third, _, read3 := readCached(t, dir, path, known)
	if read3 != n/10+1 {
		t.Fatalf("after a change: %d contents read, want %d", read3, n/10+1)
	}
	found := false
	for _, it := range third {
		if it.Record != nil && it.Record.Threat.UpstreamID == "MAL-T-0007" {
			found = it.Record.Threat.UpstreamModified.Equal(at.Add(24 * time.Hour))
		}
	}
	if !found {
		t.Fatal("the modified record MAL-T-0007 was not yielded at its new time")
	}

	// A damaged file: read as none, then written anew.
	file := cacheFiles(t, dir)[0]
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, _, read := readCached(t, dir, path, known)
	if !reflect.DeepEqual(got, third) || read != n {
		t.Fatalf("damaged cache: %d items (want %d), %d contents read (want %d)", len(got), len(third), read, n)
	}
	if _, _, read := readCached(t, dir, path, known); read != n/10+1 {
		t.Fatalf("after the damaged cache was written anew: %d contents read, want %d", read, n/10+1)
	}

	// A run that stops early leaves the file as it was.
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("enough")
	err = Source{CacheDir: dir}.Read(context.Background(), []string{path}, nil, known, func(it core.SourceItem) error {
		if it.FilesDone >= n/2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("stopped run: %v", err)
	}
	after, err := os.ReadFile(file)
	if err != nil || !reflect.DeepEqual(after, before) {
		t.Fatalf("a run that stopped changed the cache file (%v)", err)
	}
	if files := cacheFiles(t, dir); len(files) != 1 {
		t.Fatalf("cache files after a stopped run: %q", files)
	}
}

// A head survives the cache's encoding exactly; anything else is refused.
func TestCachedHeadEncoding(t *testing.T) {
	h := &core.UpstreamVersion{Source: SourceName, IDs: []string{"MAL-1/npm/a", "MAL-1/pypi/b"}, Modified: time.Date(1, 2, 3, 4, 5, 6, 789, time.UTC)}
	got, ok := decodeCachedHead(encodeHead(h))
	if !ok || !reflect.DeepEqual(got, h) {
		t.Fatalf("%+v %v", got, ok)
	}
	b := encodeHead(h)
	for i := range len(b) {
		if _, ok := decodeCachedHead(b[:i]); ok {
			t.Fatalf("a head cut at %d of %d bytes was read", i, len(b))
		}
	}
	if _, err := checkHeadFile([]byte(headCacheMagic + "\x01\x00\x00\x00")); err == nil {
		t.Fatal("a file of no entries and no digest was read")
	}
}

// A look-up finds every head a file holds, and no other, whatever the
// number of entries (the search starts where a digest's value places it).
func TestHeadFileLookup(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 2, 3, 17, 1000, 5000} {
		dir := t.TempDir()
		s := newSpillIn(64, dir)
		var in []digest
		for i := range n {
			d := sha256.Sum256([]byte(fmt.Sprint(i)))
			if i%7 == 3 {
				d[0], d[1] = 0, byte(i) // clustered at the start
			}
			in = append(in, d)
			h := &core.UpstreamVersion{Source: SourceName, IDs: []string{fmt.Sprint("MAL-", i)}, Modified: time.Unix(int64(i), 0).UTC()}
			if err := s.add(string(d[:]), string(encodeHead(h))); err != nil {
				t.Fatal(err)
			}
		}
		file := filepath.Join(dir, "heads.bin")
		if err := writeHeadFile(file, s); err != nil {
			t.Fatal(err)
		}
		f, err := openHeadFile(file)
		if err != nil || f == nil {
			t.Fatalf("%d entries: %v", n, err)
		}
		for i, d := range in {
			h, ok := f.lookup(d)
			if !ok || h.IDs[0] != fmt.Sprint("MAL-", i) || h.Modified.Unix() != int64(i) {
				t.Fatalf("%d entries: entry %d: %+v %v", n, i, h, ok)
			}
			d[31] ^= 1
			if _, ok := f.lookup(d); ok {
				t.Fatalf("%d entries: a digest it does not hold was found", n)
			}
		}
		for _, d := range []digest{{}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
			if _, ok := f.lookup(d); ok {
				t.Fatalf("%d entries: digest %x found", n, d[:4])
			}
		}
		f.close()
	}
}
