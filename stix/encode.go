package stix

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/threatd/threatd/core"
)

// MarshalJSON renders an object as encoding/json renders the same map,
// byte for byte (keys sorted, strings escaped as it escapes them), without
// its reflection: the shared objects of every TAXII page and bundle go
// through it (a record's own objects are written straight to JSON,
// write.go).
func (o Object) MarshalJSON() ([]byte, error) { return AppendJSON(nil, map[string]any(o)) }

// AppendJSON appends v as JSON to b, as encoding/json.Marshal renders it,
// for the values objects hold (strings, booleans, integers, slices and
// maps of them); anything else goes through encoding/json.
func AppendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return core.AppendJSONString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case []string:
		if v == nil {
			return append(b, "null"...), nil
		}
		return core.AppendJSONStrings(b, v), nil
	case []any:
		return appendSlice(b, v)
	case []map[string]any:
		return appendSlice(b, v)
	case []Object:
		return appendSlice(b, v)
	case Object:
		return appendMap(b, v)
	case map[string]any:
		return appendMap(b, v)
	}
	out, err := json.Marshal(v)
	return append(b, out...), err
}

func appendSlice[E any](b []byte, v []E) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	var err error
	for i, e := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = AppendJSON(b, e); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

func appendMap[M ~map[string]any](b []byte, m M) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var buf [24]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(core.AppendJSONString(b, k), ':')
		if b, err = AppendJSON(b, m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}
