// Package coretest has helpers for tests of the layers that carry a
// report's fields.
package coretest

import (
	"reflect"
	"time"

	"github.com/threatd/threatd/core"
)

// Fill gives every field of d that is still empty a value of its type that
// passes core's checks by type, so tests that carry every field cover a new
// one without a change (fields with rules of their own need a valid value
// set by the test).
func Fill(d *core.Details) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var n int64 = 42
	v := reflect.ValueOf(d).Elem()
	for _, f := range core.DetailFields {
		fv := v.Field(f.Index)
		if !fv.IsZero() {
			continue
		}
		switch fv.Interface().(type) {
		case []string:
			fv.Set(reflect.ValueOf([]string{"x-" + f.Name}))
		case *time.Time:
			fv.Set(reflect.ValueOf(&at))
		case *int64:
			fv.Set(reflect.ValueOf(&n))
		default:
			fv.SetString("x-" + f.Name)
		}
	}
}
