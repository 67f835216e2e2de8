// Package archive reads the files of a package archive for analysis, as
// hostile input: npm and crates.io tarballs, PyPI sdists and wheels,
// RubyGems .gem files, Go module zips and .vsix files, and the archives
// nested in them up to MaxDepth levels. It never writes a file and never
// follows a link: entries whose path leaves the archive (../, absolute),
// links and devices are skipped; what is read is bounded by the limits,
// and an archive over one, unreadable or truncated is refused with the
// reason (*Refused).
package archive

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/threatd/threatd/core/analysis"
)

// MaxDepth is how deep archives nested in archives are opened: the
// package's own is level 1.
const MaxDepth = 3

// File is one regular file of an archive.
type File struct {
	// Path is the file's path; inside a nested archive it is
	// "outer.tgz!inner/file.js".
	Path string
	Data []byte
}

// Refused is why an archive could not be read whole.
type Refused struct{ Reason string }

func (r *Refused) Error() string { return r.Reason }

func refuse(format string, a ...any) error { return &Refused{Reason: fmt.Sprintf(format, a...)} }

// Stats are what a walk read.
type Stats struct {
	Files int
	Bytes int64
}

// walker carries the limits across nested archives.
type walker struct {
	l     analysis.Limits
	stats Stats
	skip  func(string) bool
	fn    func(File) error
}

// Walk calls fn for each regular file of the archive at p (gzip, tar,
// tar.gz or zip, told by its content), and of the archives nested in it.
// A file skip says true of (by its path) is counted but neither read nor
// opened (skip may be nil). An error fn returns stops the walk and is
// returned; a *Refused says the archive broke a limit or could not be
// read.
func Walk(p string, l analysis.Limits, skip func(path string) bool, fn func(File) error) (Stats, error) {
	if skip == nil {
		skip = func(string) bool { return false }
	}
	w := &walker{l: l, skip: skip, fn: fn}
	f, err := os.Open(p)
	if err != nil {
		return w.stats, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return w.stats, err
	}
	if !fi.Mode().IsRegular() {
		return w.stats, refuse("%s is not a regular file", p)
	}
	if l.MaxArchiveBytes > 0 && fi.Size() > l.MaxArchiveBytes {
		return w.stats, refuse("the archive is %d bytes, over analysis.max_archive_bytes (%d)", fi.Size(), l.MaxArchiveBytes)
	}
	err = w.archive("", f, fi.Size(), 1)
	return w.stats, err
}

// kind tells an archive's format from its first bytes.
func kind(head []byte) string {
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return "gzip"
	case len(head) >= 4 && string(head[:4]) == "PK\x03\x04", len(head) >= 4 && string(head[:4]) == "PK\x05\x06":
		return "zip"
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return "tar"
	}
	return ""
}

// IsArchive says whether data is an archive Walk opens.
func IsArchive(data []byte) bool { return kind(data[:min(len(data), 512)]) != "" }

// archive walks one archive (r, of size bytes) under prefix, at depth.
func (w *walker) archive(prefix string, r io.ReaderAt, size int64, depth int) error {
	head := make([]byte, 512)
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	switch kind(head) {
	case "zip":
		return w.zip(prefix, r, size, depth)
	case "tar":
		return w.tar(prefix, io.NewSectionReader(r, 0, size), depth)
	case "gzip":
		return w.gzip(prefix, io.NewSectionReader(r, 0, size), depth)
	}
	if depth == 1 {
		return refuse("not an archive this analysis reads (gzip, tar or zip)")
	}
	return nil
}

// gzip opens a gzip stream: a tar inside it is walked, anything else is
// one file (metadata.gz is metadata).
func (w *walker) gzip(prefix string, r io.Reader, depth int) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return refuse("%sunreadable gzip: %v", at(prefix), err)
	}
	zr.Multistream(false)
	// What a stream unpacks to is bounded as a whole, the entries a tar
	// skips (links, devices) included: a bomb stops at the bound.
	var src io.Reader = zr
	if w.l.MaxUnpackedBytes > 0 {
		src = &capped{r: zr, left: w.l.MaxUnpackedBytes, limit: w.l.MaxUnpackedBytes}
	}
	br := bufio.NewReaderSize(src, 512)
	head, _ := br.Peek(512)
	if kind(head) == "tar" {
		return w.tar(prefix, br, depth)
	}
	name := strings.TrimSuffix(path.Base(strings.TrimSuffix(prefix, "!")), ".gz")
	if name == "" || name == "." {
		name = "content"
	}
	data, err := w.read(prefix+name, br)
	if err != nil {
		return err
	}
	return w.file(prefix+name, data, depth)
}

// tar walks a tar stream.
func (w *walker) tar(prefix string, r io.Reader, depth int) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return refuse("%sunreadable or truncated tar: %v", at(prefix), err)
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeGNUSparse { // Go reads the old TypeRegA as TypeReg
			continue // directories, links, devices, FIFOs
		}
		name, ok := clean(h.Name)
		if !ok {
			continue
		}
		if w.skip(prefix + name) {
			if err := w.count(prefix+name, 0); err != nil {
				return err
			}
			continue
		}
		if err := w.count(prefix+name, h.Size); err != nil {
			return err
		}
		data, err := w.read(prefix+name, tr)
		if err != nil {
			return err
		}
		if err := w.file(prefix+name, data, depth); err != nil {
			return err
		}
	}
}

// zip walks a zip archive.
func (w *walker) zip(prefix string, r io.ReaderAt, size int64, depth int) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return refuse("%sunreadable zip: %v", at(prefix), err)
	}
	if w.l.MaxFiles > 0 && w.stats.Files+len(zr.File) > w.l.MaxFiles {
		return refuse("%sthe archive holds %d entries, over analysis.max_files (%d)", at(prefix), len(zr.File), w.l.MaxFiles)
	}
	for _, f := range zr.File {
		if !f.Mode().IsRegular() {
			continue // directories, links
		}
		name, ok := clean(f.Name)
		if !ok {
			continue
		}
		if w.skip(prefix + name) {
			if err := w.count(prefix+name, 0); err != nil {
				return err
			}
			continue
		}
		if err := w.count(prefix+name, int64(f.UncompressedSize64)); err != nil {
			return err
		}
		rc, err := f.Open()
		if err != nil {
			return refuse("%s: unreadable: %v", prefix+name, err)
		}
		data, err := w.read(prefix+name, rc)
		_ = rc.Close()
		if err != nil {
			return err
		}
		if err := w.file(prefix+name, data, depth); err != nil {
			return err
		}
	}
	return nil
}

// count counts one more file of declared size against the limits.
func (w *walker) count(name string, declared int64) error {
	w.stats.Files++
	if w.l.MaxFiles > 0 && w.stats.Files > w.l.MaxFiles {
		return refuse("more than analysis.max_files (%d) files", w.l.MaxFiles)
	}
	if w.l.MaxFileBytes > 0 && declared > w.l.MaxFileBytes {
		return refuse("%s is %d bytes, over analysis.max_file_bytes (%d)", name, declared, w.l.MaxFileBytes)
	}
	return nil
}

// read reads one file, whatever its header declared, within the limits.
func (w *walker) read(name string, r io.Reader) ([]byte, error) {
	limit := int64(1<<62 - 1)
	if w.l.MaxFileBytes > 0 {
		limit = w.l.MaxFileBytes
	}
	if w.l.MaxUnpackedBytes > 0 {
		limit = min(limit, w.l.MaxUnpackedBytes-w.stats.Bytes)
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, limit+1))
	w.stats.Bytes += n
	if err != nil {
		return nil, refuse("%s: unreadable or truncated: %v", name, err)
	}
	if n > limit {
		if w.l.MaxFileBytes > 0 && n > w.l.MaxFileBytes {
			return nil, refuse("%s unpacks to more than analysis.max_file_bytes (%d)", name, w.l.MaxFileBytes)
		}
		return nil, refuse("the archive unpacks to more than %d bytes (analysis limit)", w.l.MaxUnpackedBytes)
	}
	return buf.Bytes(), nil
}

// file hands one file to fn, or walks it when it is an archive and depth
// allows.
func (w *walker) file(name string, data []byte, depth int) error {
	if depth < MaxDepth && Nested(name) && IsArchive(data) {
		return w.archive(name+"!", bytes.NewReader(data), int64(len(data)), depth+1)
	}
	return w.fn(File{Path: name, Data: data})
}

// Nested says whether a file's name is one of an archive opened when
// nested: a tarball, a zip, a wheel, a gem's data.tar.gz, a .crate, a .jar.
func Nested(name string) bool {
	n := strings.ToLower(name[strings.LastIndex(name, "!")+1:])
	for _, ext := range []string{".tgz", ".tar.gz", ".tar", ".gz", ".zip", ".whl", ".gem", ".crate", ".jar", ".vsix", ".egg"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

// clean is an entry's path inside its archive, or false when it leaves
// the archive (absolute, ../, a drive letter) or is empty.
func clean(name string) (string, bool) {
	name = strings.ReplaceAll(name, `\`, "/")
	if strings.HasPrefix(name, "/") || len(name) > 1 && name[1] == ':' {
		return "", false
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", false
		}
	}
	c := path.Clean(name)
	if c == "." || c == "" {
		return "", false
	}
	return c, true
}

func at(prefix string) string {
	if prefix == "" {
		return ""
	}
	return strings.TrimSuffix(prefix, "!") + ": "
}

// capped fails a read past limit bytes.
type capped struct {
	r           io.Reader
	left, limit int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, refuse("a compressed stream unpacks to more than %d bytes (analysis limit)", c.limit)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
