package sourcekit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Object is how a source's file is one JSON object read member by member:
// the datadog manifest (package → versions) and the ThreatFox export
// (IOC id → its IOC).
type Object struct {
	// Max bounds one member's value, in bytes.
	Max int64
	// What names a member for Capped ("a package's entry"), Members its
	// plural in errors ("packages"), and Label one member by its key
	// (`package "x"`, `IOC 12`).
	What, Members string
	Label         func(key string) string
	// NotShape is the source's error for a file of another shape.
	NotShape func(path, what string) error
	// Key, when set, refuses a key before its value is read.
	Key func(key string) error
}

// Each reads the object at path and calls fn with each member's key and
// raw value, in file order: a file of another shape, a member over Max,
// or anything after the object is refused, whatever fn did with the
// members before it (the source imports nothing then).
func (o Object) Each(ctx context.Context, path string, fn func(key string, raw json.RawMessage) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cr := &Capped{R: f, Max: o.Max, What: o.What}
	dec := json.NewDecoder(cr)
	notShape := func(what string) error { return o.NotShape(path, what) }
	tok, err := dec.Token()
	if err != nil {
		return notShape(err.Error())
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return notShape(fmt.Sprintf("it starts with %v", tok))
	}
	n := 0
	for dec.More() {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		n++
		cr.Mark()
		tok, err := dec.Token()
		if err != nil {
			return notShape(fmt.Sprintf("after %d %s: %v", n-1, o.Members, err))
		}
		key, _ := tok.(string)
		if o.Key != nil {
			if err := o.Key(key); err != nil {
				return notShape(err.Error())
			}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return notShape(fmt.Sprintf("%s: %v", o.Label(key), err))
		}
		if cr.Over() {
			return fmt.Errorf("%s: %s: longer than %d bytes (nothing was imported)", path, o.Label(key), o.Max)
		}
		if err := fn(key, raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return notShape(err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return notShape("more after its object")
	}
	return nil
}
