package osv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// walk calls visit for every JSON record under path (a file, a folder or a
// .zip archive) and skip for what cannot be read; it returns the first error
// of either, or the context's.
// Archives opened are handed to keep, to be closed once their entries are read.
// heads gives an archive's head cache (nil for none); heads itself is nil
// when the walk only counts the inputs: then nothing is read or stated.
func walk(ctx context.Context, path string, visit func(input) error, skip func(string, error) error, keep func(io.Closer), heads func(string) *archiveHeads) error {
	fi, err := os.Stat(path)
	if err != nil {
		return skip(path, err)
	}
	if !fi.IsDir() {
		if strings.HasSuffix(strings.ToLower(path), ".zip") {
			return walkZip(ctx, path, visit, skip, keep, heads)
		}
		in := fileInput(path)
		if heads != nil {
			in.size = uint64(max(fi.Size(), 0))
		}
		return visit(in)
	}
	// WalkDir visits each folder's entries in lexical order.
	return filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return skip(p, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		switch lower := strings.ToLower(p); {
		case d.IsDir():
		case strings.HasSuffix(lower, ".json"):
			in := fileInput(p)
			if heads != nil {
				if fi, err := d.Info(); err == nil && fi.Size() > 0 {
					in.size = uint64(fi.Size())
				}
			}
			return visit(in)
		case strings.HasSuffix(lower, ".zip"):
			return walkZip(ctx, p, visit, skip, keep, heads)
		}
		return nil
	})
}

func fileInput(p string) input {
	return input{name: p, open: func() (io.ReadCloser, error) { return os.Open(p) }}
}

// walkZip visits the JSON entries of an archive, in archive order, with
// the stored bytes of the small ones read (heads as walk's).
func walkZip(ctx context.Context, path string, visit func(input) error, skip func(string, error) error, keep func(io.Closer), heads func(string) *archiveHeads) error {
	z, err := openZip(path)
	if err != nil {
		return skip(path, fmt.Errorf("not a readable zip archive: %w", err))
	}
	keep(z)
	var cache *archiveHeads
	var seq *sequential
	if heads != nil {
		cache, seq = heads(path), newSequential(z.f)
	}
	err = z.each(func(e zipEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasSuffix(e.name, "/") || !strings.HasSuffix(strings.ToLower(e.name), ".json") {
			return nil
		}
		in := input{name: path + "!" + e.name, size: e.size, open: func() (io.ReadCloser, error) { return z.open(e) }}
		// Small entries are read here, in archive order; larger ones by
		// the worker that reads their content.
		if stored, ok := seq.stored(e, preloadMax); ok {
			in.stored = stored
			in.open = fromStored(e, stored)
		}
		if cache != nil {
			in.zip = &zipInput{z: z, e: e, heads: cache}
		}
		return visit(in)
	})
	if err != nil && ctx.Err() == nil {
		return skip(path, err)
	}
	return err
}

// preloadMax bounds the stored bytes of an entry the walk reads for the
// workers: the queues between them hold a few hundred entries.
const preloadMax = 64 << 10

// maxRecordBytes bounds one OSV file.
const maxRecordBytes = 4 << 20

// sizeHintMax bounds the buffer readAll makes from an entry's stated size
// (a larger record grows its buffer as it is read).
const sizeHintMax = 256 << 10

// readInput reads one input; withHead, it only reads the record's head
// when it has one, and keeps the bytes for decode.
//
// An archive entry whose archive's heads are cached is first read as
// stored and hashed: when its head is in the cache, that is the result
// (whatever withHead says: the entry is likely known), and the entry is
// inflated only if it must be decoded. Otherwise it is inflated from the
// bytes read, and its head read for the cache.
func readInput(in input, now time.Time, withHead bool, lim Limits) result {
	res := result{name: in.name, input: true}
	if zi := in.zip; zi != nil {
		stored, err := in.stored, error(nil)
		if stored == nil {
			stored, err = zi.z.stored(zi.e, maxStoredBytes)
		}
		if err == nil {
			res.cache, res.digest, res.entry = zi.heads, entryDigest(zi.e, stored), zi.e
			if h, ok := zi.heads.old.lookup(res.digest); ok {
				res.head, res.cached, res.stored = h, h, stored
				return res
			}
			in.open = fromStored(zi.e, stored)
		}
		// An entry that cannot be read as stored is read as before, and
		// fails there with its reason.
	}
	data, err := readAll(in)
	if err != nil {
		res.err = err
		return res
	}
	if withHead || res.cache != nil {
		if h, ok := readHead(data); ok {
			if res.cache != nil {
				res.cached = h
			}
			if withHead {
				res.head, res.raw = h, data
				return res
			}
		}
	}
	res.recs, res.err = decode(data, now, lim)
	return res
}

func readAll(in input) ([]byte, error) {
	r, err := in.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// An archive's entry says its size: the buffer is made that large
	// once, where io.ReadAll grew it from 512 bytes (three times each
	// record's size allocated, and copied, in a re-import). The size is
	// a hint: the content is read to its end whatever it says, and an
	// entry whose content is not of its size fails its check (crcReader).
	// At most sizeHintMax up front: an entry that claims more than it
	// holds costs no more than that before its check fails.
	var b bytes.Buffer
	b.Grow(int(min(in.size, sizeHintMax)) + bytes.MinRead)
	if _, err := b.ReadFrom(io.LimitReader(r, maxRecordBytes+1)); err != nil {
		return nil, err
	}
	data := b.Bytes()
	if len(data) > maxRecordBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxRecordBytes)
	}
	return data, nil
}
