package composer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// unset is the minified form's marker of a key the version before had and
// this one has not.
const unset = `"__unset"`

// version is one version's object: its keys and their values, compact.
type version map[string]json.RawMessage

// expand reads a p2 document's list of versions, minified (composer/2.0:
// each version lists only the keys that differ from the version before,
// "__unset" for one it lacks) or not, into whole versions. It is
// Composer's MetadataMinifier::expand.
func expand(list []json.RawMessage, minified bool) ([]version, error) {
	out := make([]version, 0, len(list))
	var last version
	for i, raw := range list {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("version %d: %w", i, err)
		}
		if v == nil {
			return nil, fmt.Errorf("version %d is not an object", i)
		}
		if !minified || last == nil {
			last = compact(v)
			out = append(out, last)
			continue
		}
		next := make(version, len(last)+len(v))
		for k, x := range last {
			next[k] = x
		}
		for k, x := range compact(v) {
			if string(x) == unset {
				delete(next, k)
			} else {
				next[k] = x
			}
		}
		last = next
		out = append(out, next)
	}
	return out, nil
}

// minify writes whole versions in the minified form: the first whole,
// each next one with the keys whose values differ from the one before
// and "__unset" for those it lacks. It is Composer's
// MetadataMinifier::minify: expand(minify(vs)) is vs.
func minify(vs []version) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(vs))
	var last version
	for _, v := range vs {
		diff := version{}
		if last == nil {
			diff = v
		} else {
			for k, x := range v {
				if y, ok := last[k]; !ok || !bytes.Equal(x, y) {
					diff[k] = x
				}
			}
			for k := range last {
				if _, ok := v[k]; !ok {
					diff[k] = json.RawMessage(unset)
				}
			}
		}
		last = v
		out = append(out, diff.marshal())
	}
	return out
}

// compact writes each value without insignificant space, so that equal
// values compare equal.
func compact(v map[string]json.RawMessage) version {
	out := make(version, len(v))
	for k, x := range v {
		var b bytes.Buffer
		if json.Compact(&b, x) == nil {
			x = b.Bytes()
		}
		out[k] = x
	}
	return out
}

// marshal writes the object with its keys in order.
func (v version) marshal() json.RawMessage {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// field reads a string field of a version ("" when absent or not a string).
func (v version) field(k string) string {
	var s string
	if raw, ok := v[k]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}
