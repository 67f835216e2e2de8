package osv

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// smallSpills makes every spill of the test write several sorted runs to
// disk and merge them, as a million-record export does.
func smallSpills(t *testing.T) {
	old := spillChunk
	spillChunk = 7
	t.Cleanup(func() { spillChunk = old })
}

// report is a verified npm report of an imported upstream record (part
// "/name" of a record with several packages when part is true).
func report(upstream, name string, part bool, modified time.Time) core.Threat {
	id := upstream
	if part {
		id += "/npm/" + name
	}
	th := core.Threat{ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", rand.Int64N(1e12)), ReportType: core.TypePackage,
		Registry: core.RegistryNPM, ResourceIdentifier: name, Details: core.Details{ThreatDescription: "Steals tokens"}, Status: core.StatusVerified,
		Source: SourceName, UpstreamID: id, UpstreamModified: &modified, CreatedAt: modified, UpdatedAt: modified, VerifiedAt: &modified, Version: 1}
	return th
}

// TestArchiveOfManyRecords: 70,000 records (more than a zip's 65,535
// without zip64), among them the reports of multi-package records
// scattered through the stream, make an archive that archive/zip and the
// importer's own streaming reader both read whole: every record once,
// each multi-package record merged with all its packages, each entry's
// CRC-32 right.
func TestArchiveOfManyRecords(t *testing.T) {
	smallSpills(t)
	const n, multi = 70_000, 50
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	w := NewArchiveWriter(&buf)
	parts := map[string][]string{}
	for i := range n {
		if err := w.Add(report(fmt.Sprintf("MAL-2026-%d", i), fmt.Sprintf("pkg-%d", i), false, at)); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			// A part of each of the multi-package records, in turn.
			m := fmt.Sprintf("MAL-MULTI-%d", (i/1000)%multi)
			name := fmt.Sprintf("part-%d", i)
			parts[m] = append(parts[m], name)
			r := report(m, name, true, at.Add(time.Duration(i)*time.Second))
			if i == 0 {
				// A part as large as an imported record may be: it is held
				// on disk, not in the sort.
				r.Details.ThreatDescription = strings.Repeat("x", 2<<20)
			}
			if err := w.Add(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	written, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if written != n+len(parts) {
		t.Fatalf("%d records written, want %d", written, n+len(parts))
	}
	got := readArchive(t, buf.Bytes())
	if len(got) != written {
		t.Fatalf("archive/zip reads %d records, want %d", len(got), written)
	}
	for m, names := range parts {
		var v Vuln
		if err := json.Unmarshal(got[m], &v); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		var have []string
		for _, a := range v.Affected {
			have = append(have, a.Package.Name)
		}
		slices.Sort(have)
		slices.Sort(names)
		if !slices.Equal(have, names) {
			t.Fatalf("%s names %v, want %v", m, have, names)
		}
	}
	var big Vuln
	if err := json.Unmarshal(got["MAL-MULTI-0"], &big); err != nil || len(big.Summary) != 2<<20 {
		t.Fatalf("MAL-MULTI-0, whose first part is 2 MiB: %v, summary of %d bytes", err, len(big.Summary))
	}
	var v Vuln
	if err := json.Unmarshal(got["MAL-2026-69999"], &v); err != nil || v.Affected[0].Package.Name != "pkg-69999" {
		t.Fatalf("MAL-2026-69999: %v %+v", err, v)
	}

	// The importer's reader, which needs zip64 past 65,535 entries.
	path := filepath.Join(t.TempDir(), "all.zip")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	z, err := openZip(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if z.entries != uint64(written) {
		t.Fatalf("the end records say %d entries, want %d", z.entries, written)
	}
	seen := 0
	if err := z.each(func(e zipEntry) error {
		r, err := z.open(e)
		if err != nil {
			return err
		}
		defer r.Close()
		if _, err := io.Copy(io.Discard, r); err != nil { // the CRC-32 is checked at the end
			return fmt.Errorf("%s: %w", e.name, err)
		}
		seen++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen != written {
		t.Fatalf("the streaming reader read %d entries, want %d", seen, written)
	}
}

// Two reports that would make records of one name fail the archive, which
// is then not a readable zip (it has no directory): a consumer never takes
// half of it for the whole.
func TestArchiveRefusesTwoRecordsOfOneName(t *testing.T) {
	smallSpills(t)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		second core.Threat
	}{
		{"two whole records", report("MAL-1", "b", false, at)},
		{"a whole record and a part", report("MAL-1", "b", true, at)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewArchiveWriter(&buf)
			for i := range 20 {
				if err := w.Add(report(fmt.Sprintf("MAL-X-%d", i), "x", false, at)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Add(report("MAL-1", "a", false, at)); err != nil {
				t.Fatal(err)
			}
			if err := w.Add(c.second); err != nil {
				t.Fatal(err)
			}
			_, err := w.Close()
			if err == nil || err.Error() != "osv export: two records named MAL-1" {
				t.Fatalf("Close: %v", err)
			}
			if _, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len())); err == nil {
				t.Fatal("the failed archive reads as a zip")
			}
		})
	}
}

// modified_id.csv, sorted on disk, is what sorting in memory gives: one
// line per record at its latest time, newest first, the same time by id.
func TestModifiedIndexMatchesInMemorySort(t *testing.T) {
	smallSpills(t)
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	latest := map[string]time.Time{}
	var m ModifiedIndex
	for i := range 2_000 {
		// Few distinct times, so that ties are common; ids of varying length.
		at := base.Add(time.Duration(rng.IntN(40)) * time.Hour).Add(time.Duration(rng.IntN(3)) * time.Nanosecond * 250)
		id := fmt.Sprintf("MAL-%d", rng.IntN(900))
		part := i%3 == 0
		m.Add(report(id, fmt.Sprintf("p%d", i), part, at))
		if at.After(latest[id]) {
			latest[id] = at
		}
	}
	pending := report("MAL-PENDING", "p", false, base)
	pending.Status = core.StatusPending
	m.Add(pending)
	type line struct {
		at time.Time
		id string
	}
	var want []line
	for id, at := range latest {
		want = append(want, line{at, id})
	}
	slices.SortFunc(want, func(a, b line) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	var wantText strings.Builder
	for _, l := range want {
		fmt.Fprintf(&wantText, "%s,%s\n", osvTime(l.at), l.id)
	}
	var got bytes.Buffer
	n, err := m.WriteTo(&got)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != wantText.String() || n != int64(got.Len()) {
		t.Fatalf("modified_id.csv (%d bytes said) differs from the in-memory sort:\n%.600s\nwant:\n%.600s", n, got.String(), wantText.String())
	}
}

// BenchmarkArchiveWriter: records per second into an all.zip, 100,000 at
// a time (the names sorted on disk, the directory spooled).
func BenchmarkArchiveWriter(b *testing.B) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	reports := make([]core.Threat, 100_000)
	for i := range reports {
		reports[i] = report(fmt.Sprintf("MAL-2026-%d", i), fmt.Sprintf("pkg-%d", i), false, at)
	}
	b.ResetTimer()
	for range b.N {
		w := NewArchiveWriter(io.Discard)
		for _, r := range reports {
			if err := w.Add(r); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(reports))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkModifiedIndex: records per second into modified_id.csv, 100,000
// at a time (sorted on disk).
func BenchmarkModifiedIndex(b *testing.B) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	reports := make([]core.Threat, 100_000)
	for i := range reports {
		reports[i] = report(fmt.Sprintf("MAL-2026-%d", i), fmt.Sprintf("pkg-%d", i), false, at.Add(time.Duration(i*7919%100_000)*time.Second))
	}
	b.ResetTimer()
	for range b.N {
		var m ModifiedIndex
		for _, r := range reports {
			m.Add(r)
		}
		if _, err := m.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(reports))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// Entries that start past 4 GiB get zip64 offsets in the directory, and
// the end records say where the directory is: the archive, written 5 GiB
// into a sparse file (as after 5 GiB of earlier entries), reads whole with
// archive/zip and with the importer's reader.
func TestZipWriterPastFourGiB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const start = 5 << 30
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	z, err := newZipWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	z.out.n = start // what the archive holds before these entries
	want := map[string]string{"a.json": `{"a":1}`, "b.json": strings.Repeat("b", 10_000), "c.json": ""}
	for _, name := range []string{"a.json", "b.json", "c.json"} {
		w, err := z.create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, want[name])
	}
	if err := z.close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.File) != 3 {
		t.Fatalf("archive/zip reads %d entries, want 3", len(r.File))
	}
	for _, e := range r.File {
		rc, err := e.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != want[e.Name] {
			t.Fatalf("%s: %v, %d bytes, want %d", e.Name, err, len(b), len(want[e.Name]))
		}
	}
	za, err := openZip(path)
	if err != nil {
		t.Fatal(err)
	}
	defer za.Close()
	n := 0
	if err := za.each(func(e zipEntry) error {
		if e.localHeaderStart < start {
			return fmt.Errorf("%s: local header at %d, before %d", e.name, e.localHeaderStart, start)
		}
		rc, err := za.open(e)
		if err != nil {
			return err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil || string(b) != want[e.name] {
			return fmt.Errorf("%s: %v, %d bytes", e.name, err, len(b))
		}
		n++
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("the streaming reader: %v (%d entries)", err, n)
	}
}
