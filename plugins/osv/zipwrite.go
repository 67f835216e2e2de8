package osv

import (
	"bufio"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// zipWriter writes a zip archive one entry at a time, as zipArchive reads
// one. archive/zip's Writer holds every entry's header until Close (about
// 250 bytes each: a quarter of a gigabyte for a million-record all.zip);
// this one appends each entry's central-directory record to an unlinked
// temporary file as the entry ends and copies that file out at Close, so
// memory stays flat whatever the number of entries. Entries are deflated,
// with their CRC-32 and sizes in a data descriptor after the data; zip64
// records are written where a count or an offset needs them.
type zipWriter struct {
	out     *countWriter  // the archive, and its bytes so far
	dir     *os.File      // the central directory so far
	dirBuf  *bufio.Writer // writes to dir
	entries uint64
	fw      *flate.Writer
	open    *zipEntryWriter
	buf     []byte
}

// dosDate and dosTime are 1980-01-01 00:00 in MS-DOS form, the earliest
// either can say: entries carry no modification time of their own.
const dosDate, dosTime = 1<<5 | 1, 0

const (
	sigDataDescriptor = 0x08074b50
	zipVersion20      = 20
	zipVersion45      = 45 // zip64
	creatorUnix       = 3 << 8
	flagDescriptor    = 0x0008
	flagUTF8          = 0x0800
	uint32max         = 0xffffffff
	uint16max         = 0xffff
)

func newZipWriter(w io.Writer) (*zipWriter, error) {
	dir, err := os.CreateTemp("", "threatd-zip-dir-*")
	if err != nil {
		return nil, fmt.Errorf("zip: central directory spool: %w", err)
	}
	// Unlinked at once: the file goes away with the descriptor, however the
	// export ends.
	_ = os.Remove(dir.Name())
	return &zipWriter{out: &countWriter{w: bufio.NewWriterSize(w, 64<<10)}, dir: dir, dirBuf: bufio.NewWriterSize(dir, 64<<10)}, nil
}

// zipEntryWriter is the content of the entry being written.
type zipEntryWriter struct {
	z            *zipWriter
	name         string
	flags        uint16
	offset       int64
	crc          uint32
	size         uint64
	compressedAt int64
}

func (e *zipEntryWriter) Write(p []byte) (int, error) {
	if e.z.open != e {
		return 0, errors.New("zip: write to an entry already closed")
	}
	e.crc = crc32.Update(e.crc, crc32.IEEETable, p)
	e.size += uint64(len(p))
	return e.z.fw.Write(p)
}

// create starts an entry named name, ending the one before.
func (z *zipWriter) create(name string) (io.Writer, error) {
	if err := z.closeEntry(); err != nil {
		return nil, err
	}
	if len(name) > uint16max {
		return nil, fmt.Errorf("zip: entry name of %d bytes", len(name))
	}
	e := &zipEntryWriter{z: z, name: name, offset: z.out.n, flags: flagDescriptor}
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			e.flags |= flagUTF8
			break
		}
	}
	b := z.buf[:0]
	b = binary.LittleEndian.AppendUint32(b, sigLocal)
	b = binary.LittleEndian.AppendUint16(b, zipVersion20)
	b = binary.LittleEndian.AppendUint16(b, e.flags)
	b = binary.LittleEndian.AppendUint16(b, zipDeflate)
	b = binary.LittleEndian.AppendUint16(b, dosTime)
	b = binary.LittleEndian.AppendUint16(b, dosDate)
	b = append(b, make([]byte, 12)...) // CRC-32 and sizes: in the data descriptor
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = append(b, name...)
	z.buf = b
	if _, err := z.out.Write(b); err != nil {
		return nil, err
	}
	e.compressedAt = z.out.n
	if z.fw == nil {
		fw, err := flate.NewWriter(z.out, 5)
		if err != nil {
			return nil, err
		}
		z.fw = fw
	} else {
		z.fw.Reset(z.out)
	}
	z.open = e
	return e, nil
}

const zipDeflate = 8

// closeEntry ends the open entry: its data descriptor, and its record in
// the central directory.
func (z *zipWriter) closeEntry() error {
	e := z.open
	if e == nil {
		return nil
	}
	z.open = nil
	if err := z.fw.Close(); err != nil {
		return err
	}
	comp := uint64(z.out.n - e.compressedAt)
	if comp >= uint32max || e.size >= uint32max {
		return fmt.Errorf("zip: entry %s is larger than 4 GiB", e.name)
	}
	b := z.buf[:0]
	b = binary.LittleEndian.AppendUint32(b, sigDataDescriptor)
	b = binary.LittleEndian.AppendUint32(b, e.crc)
	b = binary.LittleEndian.AppendUint32(b, uint32(comp))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.size))
	if _, err := z.out.Write(b); err != nil {
		return err
	}

	version, offset := uint16(zipVersion20), uint32(e.offset)
	var extra []byte
	if e.offset >= uint32max {
		version, offset = zipVersion45, uint32max
		extra = binary.LittleEndian.AppendUint16(extra, 0x0001)
		extra = binary.LittleEndian.AppendUint16(extra, 8)
		extra = binary.LittleEndian.AppendUint64(extra, uint64(e.offset))
	}
	b = b[:0]
	b = binary.LittleEndian.AppendUint32(b, sigCentralDir)
	b = binary.LittleEndian.AppendUint16(b, creatorUnix|version)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = binary.LittleEndian.AppendUint16(b, e.flags)
	b = binary.LittleEndian.AppendUint16(b, zipDeflate)
	b = binary.LittleEndian.AppendUint16(b, dosTime)
	b = binary.LittleEndian.AppendUint16(b, dosDate)
	b = binary.LittleEndian.AppendUint32(b, e.crc)
	b = binary.LittleEndian.AppendUint32(b, uint32(comp))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.size))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(e.name)))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(extra)))
	b = binary.LittleEndian.AppendUint16(b, 0)            // comment
	b = binary.LittleEndian.AppendUint16(b, 0)            // disk
	b = binary.LittleEndian.AppendUint16(b, 0)            // internal attributes
	b = binary.LittleEndian.AppendUint32(b, 0o100644<<16) // a regular file, rw-r--r--
	b = binary.LittleEndian.AppendUint32(b, offset)
	b = append(b, e.name...)
	b = append(b, extra...)
	z.buf = b
	if _, err := z.dirBuf.Write(b); err != nil {
		return fmt.Errorf("zip: central directory spool: %w", err)
	}
	z.entries++
	return nil
}

// close ends the last entry, copies the central directory out after the
// entries and writes the end records; it releases the spool either way.
func (z *zipWriter) close() error {
	defer z.discard()
	if err := z.closeEntry(); err != nil {
		return err
	}
	if err := z.dirBuf.Flush(); err != nil {
		return fmt.Errorf("zip: central directory spool: %w", err)
	}
	if _, err := z.dir.Seek(0, io.SeekStart); err != nil {
		return err
	}
	start := z.out.n
	if _, err := io.Copy(z.out, z.dir); err != nil {
		return err
	}
	end := z.out.n
	size := end - start
	records, dirSize, dirOffset := uint16(z.entries), uint32(size), uint32(start)
	var b []byte
	if z.entries >= uint16max || size >= uint32max || start >= uint32max {
		records, dirSize, dirOffset = uint16max, uint32max, uint32max
		// The zip64 end of central directory record, then its locator.
		b = binary.LittleEndian.AppendUint32(b, sigEOCD64)
		b = binary.LittleEndian.AppendUint64(b, 44) // the size of what follows
		b = binary.LittleEndian.AppendUint16(b, creatorUnix|zipVersion45)
		b = binary.LittleEndian.AppendUint16(b, zipVersion45)
		b = binary.LittleEndian.AppendUint32(b, 0) // this disk
		b = binary.LittleEndian.AppendUint32(b, 0) // the directory's disk
		b = binary.LittleEndian.AppendUint64(b, z.entries)
		b = binary.LittleEndian.AppendUint64(b, z.entries)
		b = binary.LittleEndian.AppendUint64(b, uint64(size))
		b = binary.LittleEndian.AppendUint64(b, uint64(start))
		b = binary.LittleEndian.AppendUint32(b, sigEOCD64Loc)
		b = binary.LittleEndian.AppendUint32(b, 0)
		b = binary.LittleEndian.AppendUint64(b, uint64(end))
		b = binary.LittleEndian.AppendUint32(b, 1) // disks
	}
	b = binary.LittleEndian.AppendUint32(b, sigEOCD)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint16(b, records)
	b = binary.LittleEndian.AppendUint16(b, records)
	b = binary.LittleEndian.AppendUint32(b, dirSize)
	b = binary.LittleEndian.AppendUint32(b, dirOffset)
	b = binary.LittleEndian.AppendUint16(b, 0) // comment
	if _, err := z.out.Write(b); err != nil {
		return err
	}
	return z.out.w.Flush()
}

// discard releases the central directory spool (an export that failed).
func (z *zipWriter) discard() {
	if z.dir != nil {
		z.dir.Close()
		z.dir = nil
	}
}
