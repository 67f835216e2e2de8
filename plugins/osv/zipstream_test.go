package osv

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeZip writes n entries named and filled by entry, with method.
func writeZip(t *testing.T, n int, method uint16, entry func(i int) (name, content string)) string {
	t.Helper()
	return writeZipAt(t, filepath.Join(t.TempDir(), "a.zip"), n, method, entry)
}

// writeZipAt writes the archive of writeZip at path.
func writeZipAt(t *testing.T, path string, n int, method uint16, entry func(i int) (name, content string)) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for i := range n {
		name, content := entry(i)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, content)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

func numbered(i int) (string, string) {
	return fmt.Sprintf("d/%06d.json", i), fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("x", i%7))
}

// The streaming reader reads what archive/zip wrote (deflated entries are
// read by every import test), zip64 included (more
// than 65,535 entries), in archive order, with every entry's content.
func TestZipStreamZip64(t *testing.T) {
	const n = 65_600 // past 65,535: archive/zip writes a zip64 end of central directory
	z, err := openZip(writeZip(t, n, zip.Store, numbered))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if z.entries != n {
		t.Fatalf("entries %d, want %d", z.entries, n)
	}
	i := 0
	err = z.each(func(e zipEntry) error {
		if want := fmt.Sprintf("d/%06d.json", i); e.name != want {
			return fmt.Errorf("entry %d is %q, want %q", i, e.name, want)
		}
		if i%997 == 0 || i == n-1 {
			r, err := z.open(e)
			if err != nil {
				return err
			}
			b, err := io.ReadAll(r)
			r.Close()
			if want := fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("x", i%7)); err != nil || string(b) != want {
				return fmt.Errorf("entry %d: %q, %v", i, b, err)
			}
		}
		i++
		return nil
	})
	if err != nil || i != n {
		t.Fatalf("read %d entries: %v", i, err)
	}
}

// Stored entries are read too, and a damaged entry fails its checksum
// instead of yielding altered data.
func TestZipStreamStoredAndCorrupt(t *testing.T) {
	path := writeZip(t, 3, zip.Store, numbered)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(raw, []byte(`{"n":1,`))
	raw[at+5] = '7' // {"n":7, in place of {"n":1,
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	z, err := openZip(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var got []string
	_ = z.each(func(e zipEntry) error {
		r, err := z.open(e)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			got = append(got, "error: "+err.Error())
		} else {
			got = append(got, string(b))
		}
		return nil
	})
	if len(got) != 3 || got[0] != `{"n":0,"pad":""}` || !strings.Contains(got[1], "checksum") || got[2] != `{"n":2,"pad":"xx"}` {
		t.Fatalf("entries: %q", got)
	}
	if _, err := openZip(filepath.Join(t.TempDir(), "missing.zip")); err == nil {
		t.Fatal("a missing file opened")
	}
	notZip := filepath.Join(t.TempDir(), "not.zip")
	_ = os.WriteFile(notZip, []byte("hello"), 0o600)
	if _, err := openZip(notZip); err == nil {
		t.Fatal("a file that is not a zip opened")
	}
}

// An entry's size is only a hint for the buffer it is read into: an entry
// whose central directory claims more than it holds is refused as
// corrupt, and an honest entry's buffer is about its size.
func TestZipEntrySizeIsAHint(t *testing.T) {
	t.Parallel()
	path := writeZip(t, 2, zip.Store, numbered)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cd := bytes.Index(raw, []byte("PK\x01\x02")) // the first entry's central record
	binary.LittleEndian.PutUint32(raw[cd+24:], maxRecordBytes-1)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var inputs []input
	err = walkZip(t.Context(), path, func(in input) error { inputs = append(inputs, in); return nil },
		func(name string, err error) error { return err }, func(io.Closer) {}, nil)
	if err != nil || len(inputs) != 2 {
		t.Fatalf("%d inputs: %v", len(inputs), err)
	}
	if inputs[0].size != maxRecordBytes-1 {
		t.Fatalf("size %d: the patch missed the entry", inputs[0].size)
	}
	if _, err := readAll(inputs[0]); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("an entry that claims %d bytes read: %v", inputs[0].size, err)
	}
	data, err := readAll(inputs[1])
	if err != nil || string(data) != `{"n":1,"pad":"x"}` || cap(data) > len(data)+2*bytes.MinRead {
		t.Fatalf("entry 1: %q (capacity %d), %v", data, cap(data), err)
	}
}

// The walk reads entries' stored bytes in archive order through one
// buffer; an entry behind what it has read, or larger than it reads, is
// left to a positioned read, which gives the same bytes.
func TestSequentialStored(t *testing.T) {
	t.Parallel()
	path := writeZip(t, 300, zip.Deflate, numbered)
	z, err := openZip(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var entries []zipEntry
	if err := z.each(func(e zipEntry) error { entries = append(entries, e); return nil }); err != nil {
		t.Fatal(err)
	}
	seq := newSequential(z.f)
	for i, e := range entries {
		want, err := z.stored(e, maxStoredBytes)
		if err != nil {
			t.Fatal(err)
		}
		if i%5 == 4 {
			continue // a gap: skipped over
		}
		got, ok := seq.stored(e, preloadMax)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("entry %d read in order: %v", i, ok)
		}
		if i > 0 {
			if _, ok := seq.stored(entries[i-1], preloadMax); ok {
				t.Fatalf("entry %d, behind entry %d, was read in order", i-1, i)
			}
		}
	}
	if _, ok := newSequential(z.f).stored(entries[0], 0); ok {
		t.Fatal("an entry larger than the bound was read")
	}
}

// The walk that only counts inputs reads no entry; the walk that reads
// them reads small entries' stored bytes in archive order.
func TestCountingWalkReadsNothing(t *testing.T) {
	t.Parallel()
	path := writeZip(t, 50, zip.Deflate, numbered)
	for _, reading := range []bool{false, true} {
		var heads func(string) *archiveHeads
		if reading {
			heads = func(string) *archiveHeads { return nil }
		}
		var closers []io.Closer
		stored := 0
		err := walk(t.Context(), path, func(in input) error {
			if in.stored != nil {
				stored++
			}
			return nil
		}, func(_ string, err error) error { return err }, func(c io.Closer) { closers = append(closers, c) }, heads)
		for _, c := range closers {
			c.Close()
		}
		if want := map[bool]int{false: 0, true: 50}[reading]; err != nil || stored != want {
			t.Fatalf("reading %v: %d of 50 entries read as stored, want %d (%v)", reading, stored, want, err)
		}
	}
}
