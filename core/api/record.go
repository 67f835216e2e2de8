package api

import (
	"reflect"
	"time"

	"github.com/threatd/threatd/core"
)

// A record is a threat record as clients read it (spec §2.4 plus
// docs/api/records.md): every field present, absent values null, arrays
// never null. Existing OpenSourceMalware clients read these names. It is
// written as its identity (recordHead), every field of core.Details under
// its JSON name, then its review state (recordTail), in one struct type
// built from those (recordType): a new report field appears in records
// without a change here, and encoding/json writes a record as any struct.
type recordHead struct {
	ID                 string  `json:"id"`
	Status             string  `json:"status"`
	ReportType         string  `json:"report_type"`
	ResourceIdentifier string  `json:"resource_identifier"`
	Registry           *string `json:"registry"`
	// Description repeats threat_description under the name older clients read.
	Description string `json:"description"`
}

type recordTail struct {
	CreatedAt  time.Time  `json:"created_at"`
	VerifiedAt *time.Time `json:"verified_at"`
	VerifiedBy *string    `json:"verified_by"`
	Revision   int        `json:"revision"`
}

// recordType is a record; changedType adds a changes-mode feed's "change".
var (
	recordType  = newRecordType()
	changedType = newRecordType(reflect.StructField{Name: "Change", Type: reflect.TypeFor[feedChange](), Tag: `json:"change"`})
)

// newRecordType builds a record's struct type: recordHead's fields,
// core.Details' fields with text as *string (absent is null), recordTail's
// fields, then extra. contact_email alone is left out when absent (it is
// shown only to those who may see it).
func newRecordType(extra ...reflect.StructField) reflect.Type {
	var fields []reflect.StructField
	for _, t := range []reflect.Type{reflect.TypeFor[recordHead](), reflect.TypeFor[core.Details](), reflect.TypeFor[recordTail]()} {
		for i := range t.NumField() {
			sf := t.Field(i)
			if t == reflect.TypeFor[core.Details]() {
				name := core.DetailFields[i].Name // DetailFields is Details' fields in order
				if sf.Type.Kind() == reflect.String {
					sf.Type = reflect.TypeFor[*string]()
				}
				if name == "contact_email" {
					name += ",omitempty"
				}
				sf.Tag = reflect.StructTag(`json:"` + name + `"`)
			}
			fields = append(fields, reflect.StructField{Name: sf.Name, Type: sf.Type, Tag: sf.Tag})
		}
	}
	return reflect.StructOf(append(fields, extra...))
}

// fill sets out (a newRecordType value) from head, d and tail: empty text
// as null, nil lists as [].
func fill(out reflect.Value, head recordHead, d core.Details, tail recordTail) {
	i := 0
	for _, part := range []reflect.Value{reflect.ValueOf(head), reflect.ValueOf(d), reflect.ValueOf(tail)} {
		for j := range part.NumField() {
			v, dst := part.Field(j), out.Field(i)
			i++
			switch {
			case v.Type() == dst.Type():
				if v.Kind() == reflect.Slice && v.IsNil() {
					v = reflect.MakeSlice(v.Type(), 0, 0)
				}
				dst.Set(v)
			case v.Len() > 0: // text shown as *string
				s := v.String()
				dst.Set(reflect.ValueOf(&s))
			}
		}
	}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// toRecord renders a report for viewer: the contact e-mail only for its
// submitter and for reviewers (core.Threat.VisibleTo).
func toRecord(t core.Threat, viewer core.Principal) any {
	return newRecord(recordType, t, viewer).Interface()
}

// toChangedRecord renders a report of a changes-mode feed with its change.
func toChangedRecord(t core.Threat, viewer core.Principal, ch feedChange) any {
	out := newRecord(changedType, t, viewer)
	out.Field(out.NumField() - 1).Set(reflect.ValueOf(ch))
	return out.Interface()
}

func newRecord(typ reflect.Type, t core.Threat, viewer core.Principal) reflect.Value {
	t = t.VisibleTo(viewer)
	out := reflect.New(typ).Elem()
	fill(out, recordHead{
		ID: t.ID, Status: string(t.Status), ReportType: string(t.ReportType), ResourceIdentifier: t.ResourceIdentifier,
		Registry: nullable(t.Registry), Description: t.Details.ThreatDescription,
	}, t.Details, recordTail{CreatedAt: t.CreatedAt, VerifiedAt: t.VerifiedAt, VerifiedBy: nullable(t.VerifiedBy), Revision: t.Revision})
	return out
}

// Record renders a report as check-malicious shows it to someone who is
// neither its submitter nor a reviewer (threatd scan without a server).
func Record(t core.Threat) any { return toRecord(t, core.Principal{}) }
