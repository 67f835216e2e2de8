package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/analysis"
)

// entry is one tar entry of a test archive.
type entry struct {
	name string
	typ  byte
	body []byte
}

func tarBytes(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typ, Size: int64(len(e.body))}
		switch e.typ {
		case tar.TypeSymlink, tar.TypeLink:
			h.Linkname, h.Size = "../../etc/passwd", 0
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo, tar.TypeDir:
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = tw.Write(e.body)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

func write(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// walk walks p and returns the paths of the files given to fn.
func walk(t *testing.T, p string, l analysis.Limits) ([]string, error) {
	t.Helper()
	var got []string
	_, err := Walk(p, l, nil, func(f File) error {
		got = append(got, f.Path)
		return nil
	})
	return got, err
}

func refusedWith(t *testing.T, err error, want string) {
	t.Helper()
	var r *Refused
	if !errors.As(err, &r) || !strings.Contains(r.Reason, want) {
		t.Fatalf("error %v, want a refusal saying %q", err, want)
	}
}

// TestHostileEntriesAreSkipped: paths that leave the archive, links,
// devices and FIFOs are never read; regular files are.
func TestHostileEntriesAreSkipped(t *testing.T) {
	t.Parallel()
	p := write(t, "x.tgz", gzBytes(t, tarBytes(t, []entry{
		{"package/index.js", tar.TypeReg, []byte("module.exports = 1;\n")},
		{"../escape.js", tar.TypeReg, []byte("x")},
		{"package/../../up.js", tar.TypeReg, []byte("x")},
		{"/etc/cron.d/x", tar.TypeReg, []byte("x")},
		{"package/link", tar.TypeSymlink, nil},
		{"package/hard", tar.TypeLink, nil},
		{"package/dev", tar.TypeChar, nil},
		{"package/fifo", tar.TypeFifo, nil},
		{"package/dir/", tar.TypeDir, nil},
		{"package/lib/a.js", tar.TypeReg, []byte("a")},
	})))
	got, err := walk(t, p, analysis.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"package/index.js", "package/lib/a.js"}) {
		t.Fatalf("read %v", got)
	}
}

// TestLimits: an archive over each limit is refused with the reason.
func TestLimits(t *testing.T) {
	t.Parallel()
	zeros := make([]byte, 2<<20)
	t.Run("file bytes", func(t *testing.T) {
		t.Parallel()
		p := write(t, "big.tgz", gzBytes(t, tarBytes(t, []entry{{"package/big.js", tar.TypeReg, zeros}})))
		_, err := walk(t, p, analysis.Limits{MaxFileBytes: 1 << 20, MaxUnpackedBytes: 1 << 30})
		refusedWith(t, err, "over analysis.max_file_bytes")
	})
	t.Run("unpacked bytes", func(t *testing.T) {
		t.Parallel()
		var es []entry
		for i := range 5 {
			es = append(es, entry{fmt.Sprintf("package/f%d.js", i), tar.TypeReg, zeros})
		}
		p := write(t, "many.tgz", gzBytes(t, tarBytes(t, es)))
		_, err := walk(t, p, analysis.Limits{MaxFileBytes: 3 << 20, MaxUnpackedBytes: 6 << 20})
		refusedWith(t, err, "more than")
	})
	t.Run("archive bytes", func(t *testing.T) {
		t.Parallel()
		p := write(t, "a.tgz", gzBytes(t, tarBytes(t, []entry{{"package/a.js", tar.TypeReg, []byte("a")}})))
		_, err := walk(t, p, analysis.Limits{MaxArchiveBytes: 10})
		refusedWith(t, err, "over analysis.max_archive_bytes")
	})
	t.Run("100,001 files", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for i := range 100_001 {
			if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%d.py", i), Method: zip.Store}); err != nil {
				t.Fatal(err)
			}
		}
		_ = zw.Close()
		p := write(t, "many.whl", buf.Bytes())
		_, err := walk(t, p, analysis.DefaultLimits)
		refusedWith(t, err, "over analysis.max_files (100000)")
	})
	t.Run("files across nested archives", func(t *testing.T) {
		t.Parallel()
		var es []entry
		for i := range 40 {
			es = append(es, entry{fmt.Sprintf("f%d.js", i), tar.TypeReg, []byte("x")})
		}
		inner := gzBytes(t, tarBytes(t, es))
		p := write(t, "outer.tgz", gzBytes(t, tarBytes(t, []entry{{"package/a.tgz", tar.TypeReg, inner}, {"package/b.tgz", tar.TypeReg, inner}})))
		_, err := walk(t, p, analysis.Limits{MaxFiles: 60})
		refusedWith(t, err, "more than analysis.max_files (60)")
	})
}

// TestBombs: a zip bomb and a gzip bomb stop at the limits, having
// unpacked no more than them.
func TestBombs(t *testing.T) {
	t.Parallel()
	l := analysis.Limits{MaxFileBytes: 4 << 20, MaxUnpackedBytes: 16 << 20, MaxFiles: 1000}
	// The bombs unpack to 40 MiB: past both bounds.
	zeros := make([]byte, 1<<20)
	t.Run("zip", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.Create("bomb.js")
		for range 40 { // 40 MiB of zeros in about 40 KiB
			_, _ = w.Write(zeros)
		}
		_ = zw.Close()
		p := write(t, "bomb.zip", buf.Bytes())
		stats, err := Walk(p, l, nil, func(File) error { return nil })
		refusedWith(t, err, "max_file_bytes")
		if stats.Bytes > l.MaxFileBytes+1 {
			t.Fatalf("unpacked %d bytes", stats.Bytes)
		}
	})
	t.Run("gzip", func(t *testing.T) {
		t.Parallel()
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		// A device entry that declares 200 MiB: skipped, yet its bytes are
		// in the stream; the bound on the stream stops them.
		_ = tw.WriteHeader(&tar.Header{Name: "x", Typeflag: tar.TypeReg, Size: 200 << 20, Mode: 0o644})
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(tb.Bytes()[:512])
		for range 40 {
			_, _ = zw.Write(zeros)
		}
		_ = zw.Close()
		p := write(t, "bomb.tgz", buf.Bytes())
		_, err := walk(t, p, l)
		refusedWith(t, err, "")
	})
}

// TestNesting: archives nested in archives are opened to MaxDepth levels,
// their files named outer!inner; deeper ones are files.
func TestNesting(t *testing.T) {
	t.Parallel()
	level4 := gzBytes(t, tarBytes(t, []entry{{"deep.js", tar.TypeReg, []byte("deepest")}}))
	level3 := gzBytes(t, tarBytes(t, []entry{{"c.js", tar.TypeReg, []byte("c")}, {"d.tgz", tar.TypeReg, level4}}))
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("b.js")
	_, _ = w.Write([]byte("b"))
	w, _ = zw.Create("c.tar.gz")
	_, _ = w.Write(level3)
	_ = zw.Close()
	p := write(t, "a.tgz", gzBytes(t, tarBytes(t, []entry{{"package/a.js", tar.TypeReg, []byte("a")}, {"package/vendor/b.zip", tar.TypeReg, zb.Bytes()}})))
	got, err := walk(t, p, analysis.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"package/a.js", "package/vendor/b.zip!b.js", "package/vendor/b.zip!c.tar.gz!c.js", "package/vendor/b.zip!c.tar.gz!d.tgz"}
	if !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
}

// TestUnreadable: truncated and corrupt archives are refused, not read in
// part as if whole.
func TestUnreadable(t *testing.T) {
	t.Parallel()
	whole := gzBytes(t, tarBytes(t, []entry{{"package/index.js", tar.TypeReg, bytes.Repeat([]byte("var a = 1;\n"), 5000)}}))
	for name, b := range map[string][]byte{
		"truncated.tgz": whole[:len(whole)/2],
		"garbage.tgz":   append([]byte{0x1f, 0x8b}, bytes.Repeat([]byte{0xff}, 100)...),
		"text.tgz":      []byte("not an archive at all"),
		"zip.whl":       []byte("PK\x03\x04 truncated"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := walk(t, write(t, name, b), analysis.DefaultLimits)
			var r *Refused
			if !errors.As(err, &r) {
				t.Fatalf("%s: %v, want a refusal", name, err)
			}
			t.Logf("%s: %s", name, r.Reason)
		})
	}
}

// TestSkip: a skipped file is neither read nor opened.
func TestSkip(t *testing.T) {
	t.Parallel()
	inner := gzBytes(t, tarBytes(t, []entry{{"x.js", tar.TypeReg, []byte("x")}}))
	p := write(t, "a.tgz", gzBytes(t, tarBytes(t, []entry{{"package/a.js", tar.TypeReg, []byte("a")}, {"package/testdata/t.tgz", tar.TypeReg, inner}})))
	var got []string
	stats, err := Walk(p, analysis.DefaultLimits, func(p string) bool { return strings.Contains(p, "testdata") }, func(f File) error {
		got = append(got, f.Path)
		return nil
	})
	if err != nil || !slices.Equal(got, []string{"package/a.js"}) || stats.Files != 2 {
		t.Fatalf("read %v (%d files counted), %v", got, stats.Files, err)
	}

}
