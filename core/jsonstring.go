package core

import "encoding/json"

// AppendJSONString quotes s as encoding/json does (HTML escaping on, as in
// json.Marshal and an Encoder's default): printable ASCII is copied, with
// the quote and the backslash escaped by a backslash and <, > and & as
// \u003c, \u003e and \u0026; a string with anything else (control
// characters, anything beyond ASCII) is left to encoding/json. The
// hand-written encoders of hot paths (STIX objects, check answers) write
// their strings with it.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			out, _ := json.Marshal(s) // a string always marshals
			return append(b, out...)
		}
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '<':
			esc = `\u003c`
		case '>':
			esc = `\u003e`
		case '&':
			esc = `\u0026`
		default:
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, esc...)
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSONStrings appends list as a JSON array of strings, as
// encoding/json renders a non-nil []string ([] when list is empty or nil).
func AppendJSONStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, s)
	}
	return append(b, ']')
}
