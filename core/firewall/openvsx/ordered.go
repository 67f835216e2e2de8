package openvsx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/threatd/threatd/core/firewall"
)

// object is a JSON object with its members in the order the upstream
// wrote them: Open VSX lists allVersions newest first, and clients (ovsx)
// take the first that matches.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *object) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	o.keys, o.vals = nil, map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		if _, dup := o.vals[k]; !dup {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
	_, err = dec.Token()
	return err
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := firewall.MarshalJSON(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *object) has(k string) bool { _, ok := o.vals[k]; return ok }

func (o *object) str(k string) string {
	var s string
	_ = json.Unmarshal(o.vals[k], &s)
	return s
}

func (o *object) set(k string, v any) {
	b, _ := firewall.MarshalJSON(v)
	if !o.has(k) {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = b
}

func (o *object) del(k string) {
	if !o.has(k) {
		return
	}
	delete(o.vals, k)
	for i, kk := range o.keys {
		if kk == k {
			o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
			break
		}
	}
}

func parseObject(body []byte, what string) (*object, error) {
	var o object
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &o, nil
}
