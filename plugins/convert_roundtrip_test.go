package plugins

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// roundTrip sends v to the wire and back and wants it unchanged.
func roundTrip[T, P any](t *testing.T, v T, to func(T) P, from func(P) T) {
	t.Helper()
	if got := from(to(v)); !reflect.DeepEqual(got, v) {
		t.Errorf("%T changed crossing the plugin:\n got %+v\nwant %+v", v, got, v)
	}
}

// fill is a T whose every field, at every depth, holds a value of its own
// (no zero anywhere), so that a field the converters dropped shows.
func fill[T any](t testing.TB) T {
	t.Helper()
	var v T
	n := 0
	fillValue(t, reflect.ValueOf(&v).Elem(), &n)
	return v
}

func fillValue(t testing.TB, v reflect.Value, n *int) {
	*n++
	switch {
	case v.Type() == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(time.Date(2026, 11, 25, 1, 2, 3, *n*1000, time.UTC)))
		return
	case v.Type() == reflect.TypeOf(time.Duration(0)):
		v.SetInt(int64(*n) * int64(time.Millisecond))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Int16, reflect.Int8:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Uint16, reflect.Uint8:
		v.SetUint(uint64(*n))
	case reflect.Float64, reflect.Float32:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(t, p.Elem(), n)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillValue(t, s.Index(i), n)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fillValue(t, k, n)
			fillValue(t, e, n)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			fillValue(t, v.Field(i), n)
		}
	default:
		t.Fatalf("fill: a %s cannot be filled", v.Type())
	}
}
