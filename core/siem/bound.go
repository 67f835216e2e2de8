package siem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// MaxMessage is how long a message is at most, header included: rsyslog
// keeps 8 KiB of a message by default ($MaxMessageSize 8k) and many
// receivers no more, and a message cut by the receiver is no longer JSON
// or CEF. A longer event has its longest texts cut (a report's
// description, its payload) with a marker saying so.
const MaxMessage = 8000

// truncatedMark ends a cut text: how much was cut, and where the whole
// report is.
const truncatedMark = " …[truncated by threatd: %d more bytes; the whole report is at GET {base}/threat-data?threat_id=ID and on its public page]"

// cut shortens s by at least excess bytes (on a character boundary),
// marked; s when it cannot be shortened so.
func cut(s string, excess int) string {
	mark := fmt.Sprintf(truncatedMark, excess)
	keep := len(s) - excess - len(mark)
	if keep < 64 {
		keep = min(64, len(s))
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	if keep >= len(s) {
		return s
	}
	return s[:keep] + fmt.Sprintf(truncatedMark, len(s)-keep)
}

// boundCEF cuts the event's longest extension values until its CEF line
// fits in room bytes.
func boundCEF(e Event, version string, room int) string {
	line := CEF(e, version)
	for range 16 {
		excess := len(line) - room
		if excess <= 0 {
			return line
		}
		longest := -1
		for i, kv := range e.Ext {
			if longest < 0 || len(kv.Value) > len(e.Ext[longest].Value) {
				longest = i
			}
		}
		if longest < 0 || len(e.Ext[longest].Value) <= 128 {
			return line
		}
		ext := append([]KV(nil), e.Ext...)
		ext[longest].Value = cut(ext[longest].Value, excess)
		e.Ext = ext
		line = CEF(e, version)
	}
	return line
}

// boundJSON cuts the longest strings of a JSON body until it fits in
// room bytes; the body as it was when it is not JSON or cannot be cut.
func boundJSON(body []byte, room int) []byte {
	if len(body) <= room {
		return body
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return body
	}
	var texts []*string
	v = pointers(v, &texts)
	out := body
	for range 16 {
		excess := len(out) - room
		if excess <= 0 {
			return out
		}
		var longest *string
		for _, p := range texts {
			if longest == nil || len(*p) > len(*longest) {
				longest = p
			}
		}
		if longest == nil || len(*longest) <= 128 {
			return out
		}
		*longest = cut(*longest, excess)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // as the body was written: < and > stay one byte
		if err := enc.Encode(v); err != nil {
			return body
		}
		out = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	return out
}

// pointers makes every string of a decoded JSON value a *string (encoded
// the same), gathered in texts, so that one can be cut in place.
func pointers(v any, texts *[]*string) any {
	switch t := v.(type) {
	case string:
		p := &t
		*texts = append(*texts, p)
		return p
	case map[string]any:
		for k, e := range t {
			t[k] = pointers(e, texts)
		}
	case []any:
		for i, e := range t {
			t[i] = pointers(e, texts)
		}
	}
	return v
}
