package taxii

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// readDocument reads the STIX exporter's objects document
// (core.ObjectsDocument) in one pass: it checks the JSON (syntax, UTF-8,
// duplicate names), cuts out each object's bytes without copying them,
// and reads each object's head (id, type, spec_version, created,
// modified) as it passes. Decoding the document and then each object's
// head apart took 30 % of the daemon's CPU in a full pull. added gives
// the date_added of record i's changes; the shared objects have
// SharedAdded.
func readDocument(b []byte, records int, added func(i int) time.Time) (shared []Object, out [][]Object, err error) {
	d := jsontext.NewDecoder(bytes.NewReader(b))
	if err := expect(d, '{'); err != nil {
		return nil, nil, err
	}
	seenShared, seenRecords := false, false
	for d.PeekKind() != '}' {
		name, err := d.ReadToken()
		if err != nil {
			return nil, nil, err
		}
		switch name.String() {
		case "shared":
			seenShared = true
			if shared, err = readList(d, b, SharedAdded); err != nil {
				return nil, nil, err
			}
		case "records":
			seenRecords = true
			if err := expect(d, '['); err != nil {
				return nil, nil, err
			}
			out = make([][]Object, 0, records)
			for d.PeekKind() != ']' {
				if len(out) == records {
					return nil, nil, fmt.Errorf("more than %d records", records)
				}
				list, err := readList(d, b, added(len(out)))
				if err != nil {
					return nil, nil, err
				}
				out = append(out, list)
			}
			if err := expect(d, ']'); err != nil {
				return nil, nil, err
			}
		default:
			if err := d.SkipValue(); err != nil {
				return nil, nil, err
			}
		}
	}
	if err := expect(d, '}'); err != nil {
		return nil, nil, err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, nil, errors.New("data after the document")
	}
	if !seenShared || !seenRecords || len(out) != records {
		return nil, nil, fmt.Errorf("shared %v, records %v: %d records for %d", seenShared, seenRecords, len(out), records)
	}
	return shared, out, nil
}

// expect reads one token of kind k ('{', '}', '[' or ']').
func expect(d *jsontext.Decoder, k jsontext.Kind) error {
	t, err := d.ReadToken()
	if err != nil {
		return err
	}
	if t.Kind() != k {
		return fmt.Errorf("%v where %v was expected (offset %d)", t.Kind(), k, d.InputOffset())
	}
	return nil
}

// readList reads an array of objects added at added: each object's
// date_added is added plus its place in the array in nanoseconds, so
// that a client that resumes after the last date it saw, in the middle of
// a change with more objects than its page, misses nothing.
func readList(d *jsontext.Decoder, b []byte, added time.Time) ([]Object, error) {
	if err := expect(d, '['); err != nil {
		return nil, err
	}
	var out []Object
	added = added.UTC()
	for d.PeekKind() != ']' {
		o, err := readObject(d, b)
		if err != nil {
			return nil, err
		}
		o.DateAdded = added.Add(time.Duration(min(len(out), 999)))
		out = append(out, o)
	}
	return out, expect(d, ']')
}

// readObject reads one object, its head and its bytes (a slice of b).
func readObject(d *jsontext.Decoder, b []byte) (Object, error) {
	start := d.InputOffset()
	if err := expect(d, '{'); err != nil {
		return Object{}, err
	}
	var o Object
	var created, modified string
	var scratch [32]byte
	for d.PeekKind() != '}' {
		// The name as it is in the document, not copied: a token's
		// String was an allocation for every name of every object.
		raw, err := d.ReadValue()
		if err != nil {
			return Object{}, err
		}
		name, err := unquoted(raw, scratch[:0])
		if err != nil {
			return Object{}, err
		}
		var dst *string
		var key string // the name is void after the next read
		switch string(name) {
		case "id":
			dst, key = &o.ID, "id"
		case "type":
			dst, key = &o.Type, "type"
		case "spec_version":
			dst, key = &o.SpecVersion, "spec_version"
		case "created":
			dst, key = &created, "created"
		case "modified":
			dst, key = &modified, "modified"
		default:
			if err := d.SkipValue(); err != nil {
				return Object{}, err
			}
			continue
		}
		v, err := d.ReadToken()
		if err != nil {
			return Object{}, err
		}
		if v.Kind() != '"' {
			return Object{}, fmt.Errorf("%s is %v, not a string", key, v.Kind())
		}
		*dst = v.String()
	}
	if err := expect(d, '}'); err != nil {
		return Object{}, err
	}
	// Between the token before the object and its '{' there are only
	// white space and a comma.
	raw := bytes.TrimLeft(b[start:d.InputOffset()], " \t\r\n,")
	o.Version = modified
	if o.Version == "" {
		o.Version = created
	}
	o.JSON = json.RawMessage(raw)
	return o, nil
}

// unquoted is the text of a JSON string as it is in the document: the
// bytes between its quotes, or, when it has an escape, unescaped into
// scratch.
func unquoted(raw jsontext.Value, scratch []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != '"' {
		return nil, fmt.Errorf("a name that is not a string: %.40s", raw)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil
	}
	return jsontext.AppendUnquote(scratch, raw)
}
