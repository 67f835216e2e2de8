package core

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// DetailField is one field of Details: its JSON name (also its name in
// Submission, records, storage and the plugin protocol), its index in
// Details and in Submission, and whether it is optional (omitzero).
type DetailField struct {
	Name     string
	Index    int
	Optional bool
	sub      int
}

// DetailFields lists Details' fields in order. Layers that carry every
// field walk it instead of naming the fields.
var DetailFields = func() []DetailField {
	dt, st := reflect.TypeFor[Details](), reflect.TypeFor[Submission]()
	subs := map[string]int{}
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		subs[name] = i
	}
	out := make([]DetailField, dt.NumField())
	for i := range dt.NumField() {
		sf := dt.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		sub, ok := subs[name]
		if !ok {
			panic(fmt.Sprintf("core: Details.%s (%q) has no Submission field of that JSON name", sf.Name, name))
		}
		if fieldRules[name] == nil && !plainType(sf.Type, st.Field(sub).Type) {
			panic(fmt.Sprintf("core: Details.%s is a %s given as %s: give it a rule in fieldRules", sf.Name, sf.Type, st.Field(sub).Type))
		}
		out[i] = DetailField{Name: name, Index: i, Optional: opts == "omitzero", sub: sub}
	}
	return out
}()

var (
	timePtrType  = reflect.TypeFor[*time.Time]()
	int64PtrType = reflect.TypeFor[*int64]()
	stringsType  = reflect.TypeFor[[]string]()
	strPtrType   = reflect.TypeFor[*string]()
)

// plainType reports whether checkByType handles a Details field of type
// d given in a Submission as s.
func plainType(d, s reflect.Type) bool {
	switch {
	case d.Kind() == reflect.String, d == timePtrType:
		return s == strPtrType
	case d == stringsType, d == int64PtrType:
		return s == d
	}
	return false
}

// Limits of the fields checkByType validates.
const (
	maxShortText = 256 // characters of a one-line text
	maxListItems = 100 // entries of a list
)

// checkByType validates a field without a rule of its own and sets it in
// out: one-line text of at most maxShortText characters (trimmed); a list
// of at most maxListItems such texts; an ISO 8601 time no later than a day
// from now; a whole number that is not negative.
func checkByType(f DetailField, in, out reflect.Value, now time.Time) error {
	given, dst := in.Field(f.sub), out.Field(f.Index)
	switch {
	case dst.Kind() == reflect.String:
		if p := given.Interface().(*string); present(p) {
			v, err := text(f.Name, strings.TrimSpace(*p), maxShortText, false)
			if err != nil {
				return err
			}
			dst.SetString(v)
		}
	case dst.Type() == stringsType:
		v, err := stringList(f.Name, given.Interface().([]string), maxListItems, maxShortText)
		if err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(v))
	case dst.Type() == timePtrType:
		v, err := timestamp(f.Name, given.Interface().(*string), now)
		if err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(v))
	case dst.Type() == int64PtrType:
		if p := given.Interface().(*int64); p != nil {
			if *p < 0 {
				return Invalid(f.Name, "must not be negative")
			}
			n := *p
			dst.Set(reflect.ValueOf(&n))
		}
	}
	return nil
}

// AsSubmission returns the submit fields of t, as a full submission.
func (t Threat) AsSubmission() Submission {
	rt, ri := string(t.ReportType), t.ResourceIdentifier
	s := Submission{ReportType: &rt, ResourceIdentifier: &ri}
	if t.Registry != "" {
		reg := t.Registry
		s.Registry = &reg
	}
	in, out := reflect.ValueOf(t.Details), reflect.ValueOf(&s).Elem()
	for _, f := range DetailFields {
		v, dst := in.Field(f.Index), out.Field(f.sub)
		switch {
		case v.Kind() == reflect.String:
			if v.Len() > 0 || !f.Optional {
				str := v.String()
				dst.Set(reflect.ValueOf(&str))
			}
		case v.Type() == stringsType:
			dst.Set(reflect.ValueOf(append([]string{}, v.Interface().([]string)...)))
		case v.Type() == timePtrType:
			if p := v.Interface().(*time.Time); p != nil {
				str := p.UTC().Format(time.RFC3339Nano)
				dst.Set(reflect.ValueOf(&str))
			}
		default:
			dst.Set(v)
		}
	}
	return s
}
