package osv

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// decodeHead decodes a record's head as json.Unmarshal into a head would.
// A re-import reads every record's head and nothing else of the records
// it knows, and json.Unmarshal checked all of the record's text, then
// decoded it through reflection: 40 % of reading an archive whose
// records are known (BenchmarkReadArchives/known). scanHead reads the
// same fields in one pass with a tokenizer; whatever it cannot read
// exactly as json.Unmarshal would (a name that matches a field in
// another case, a field of another type or null, a field read twice,
// invalid UTF-8) is left to json.Unmarshal.
func decodeHead(data []byte) (head, error) {
	if h, ok := scanHead(data); ok {
		return h, nil
	}
	var h head
	err := json.Unmarshal(data, &h)
	return h, err
}

// decoders are tokenizers for scanHead, kept between records.
var decoders = sync.Pool{New: func() any { return jsontext.NewDecoder(bytes.NewBuffer(nil)) }}

// scanHead reads a head; false when json.Unmarshal must decide. The
// tokenizer reads data in place (a bytes.Buffer) and lets names repeat,
// which costs it a set of every object's names: scanHead only refuses
// the fields it reads twice (json.Unmarshal keeps the last).
func scanHead(data []byte) (h head, ok bool) {
	d := decoders.Get().(*jsontext.Decoder)
	d.Reset(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true))
	defer func() {
		d.Reset(bytes.NewBuffer(nil))
		decoders.Put(d)
	}()
	var id, modified, affected bool
	ok = object(d, func(name string) bool {
		switch name {
		case "id":
			return first(&id) && str(d, &h.ID)
		case "modified":
			return first(&modified) && str(d, &h.Modified)
		case "affected":
			return first(&affected) && array(d, func() bool {
				h.Affected = append(h.Affected, headAffected{})
				return scanAffected(d, &h.Affected[len(h.Affected)-1])
			})
		}
		return skip(d, name, "id", "modified", "affected")
	})
	if !ok {
		return head{}, false
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return head{}, false // data after the record
	}
	return h, true
}

// scanAffected reads an affected entry's package.
func scanAffected(d *jsontext.Decoder, a *headAffected) bool {
	var pkg, eco, name bool
	return object(d, func(member string) bool {
		if member != "package" {
			return skip(d, member, "package")
		}
		return first(&pkg) && object(d, func(member string) bool {
			switch member {
			case "ecosystem":
				return first(&eco) && str(d, &a.Package.Ecosystem)
			case "name":
				return first(&name) && str(d, &a.Package.Name)
			}
			return skip(d, member, "ecosystem", "name")
		})
	})
}

// first marks a field read, and reports false when it already was (a
// field read twice is left to json.Unmarshal, which keeps the last).
func first(seen *bool) bool {
	if *seen {
		return false
	}
	*seen = true
	return true
}

// object reads an object, calling member for each name with the decoder at
// its value; false on anything but an object, or when member says so.
func object(d *jsontext.Decoder, member func(name string) bool) bool {
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for d.PeekKind() == '"' {
		t, err := d.ReadToken()
		if err != nil || !member(t.String()) {
			return false
		}
	}
	t, err := d.ReadToken()
	return err == nil && t.Kind() == '}'
}

// array reads an array, calling elem for each element; false on anything
// but an array, or when elem says so.
func array(d *jsontext.Decoder, elem func() bool) bool {
	if t, err := d.ReadToken(); err != nil || t.Kind() != '[' {
		return false
	}
	for d.PeekKind() != ']' {
		if d.PeekKind() == 0 || !elem() {
			return false
		}
	}
	t, err := d.ReadToken()
	return err == nil && t.Kind() == ']'
}

// str reads a string into dst; false on anything else (null too).
func str(d *jsontext.Decoder, dst *string) bool {
	t, err := d.ReadToken()
	if err != nil || t.Kind() != '"' {
		return false
	}
	*dst = t.String()
	return true
}

// skip skips the value of a member that is none of fields; false when its
// name matches one of them in another case (json.Unmarshal would take it
// for that field) or the value is not valid.
func skip(d *jsontext.Decoder, name string, fields ...string) bool {
	for _, f := range fields {
		if bytes.EqualFold([]byte(name), []byte(f)) {
			return false
		}
	}
	return d.SkipValue() == nil
}
