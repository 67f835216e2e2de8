package core

import (
	"strconv"
	"strings"
	"time"
)

// The report's fields are defined once, in fields.txt; `make fields` (or
// `go generate ./core`) writes Details, Submission and the per-field code
// of every layer from it (fields_gen.go here), then the protocol code.
// Each field is carried by typed code for its kind.
//go:generate go run ../cmd/internal/fieldgen -table fields.txt -root ..
//go:generate make -C .. proto

// FieldKind is how a report field is given, stored and shown.
type FieldKind uint8

// The field kinds of fields.txt.
const (
	FieldText     FieldKind = iota + 1 // text (one line unless its rule says otherwise)
	FieldSeverity                      // a Severity, given as text
	FieldList                          // a list of one-line texts
	FieldTime                          // an ISO 8601 time, given as text
	FieldCount                         // a whole number that is not negative
)

// DetailField is one field of Details: its JSON name (also its name in
// Submission, records, storage and the plugin protocol), its kind, and
// whether it is optional (omitzero).
type DetailField struct {
	Name     string
	Kind     FieldKind
	Optional bool
}

// SubmitField is one field of Submission: its JSON name, the label the web
// pages give it, its kind, and whether it is an identity field (what the
// report is about: a patch may repeat it but never change it). Exactly one
// of its accessors is set, by kind: text for text, severity and time,
// list for lists, count for counts.
type SubmitField struct {
	Name, Label string
	Kind        FieldKind
	Identity    bool
	text        func(*Submission) **string
	list        func(*Submission) *[]string
	count       func(*Submission) **int64
}

// Given reports whether s gives the field (a nil pointer or slice is absent).
func (f SubmitField) Given(s *Submission) bool {
	switch {
	case f.text != nil:
		return *f.text(s) != nil
	case f.list != nil:
		return *f.list(s) != nil
	}
	return *f.count(s) != nil
}

// SetText sets a text, severity or time field of s.
func (f SubmitField) SetText(s *Submission, v *string) { *f.text(s) = v }

// SetList sets a list field of s.
func (f SubmitField) SetList(s *Submission, v []string) { *f.list(s) = v }

// SetCount sets a count field of s.
func (f SubmitField) SetCount(s *Submission, v *int64) { *f.count(s) = v }

// copyTo sets the field in dst to its value in src.
func (f SubmitField) copyTo(dst, src *Submission) {
	switch {
	case f.text != nil:
		*f.text(dst) = *f.text(src)
	case f.list != nil:
		*f.list(dst) = *f.list(src)
	default:
		*f.count(dst) = *f.count(src)
	}
}

// display renders the field's value in s for diffs: text as it is, lists
// joined with ", ", numbers in decimal, "" when absent.
func (f SubmitField) display(s *Submission) string {
	switch {
	case f.text != nil:
		if p := *f.text(s); p != nil {
			return *p
		}
	case f.list != nil:
		return strings.Join(*f.list(s), ", ")
	default:
		if p := *f.count(s); p != nil {
			return strconv.FormatInt(*p, 10)
		}
	}
	return ""
}

// detailCheck validates one field of Details given the submission and the
// report as validated so far (its identity and the fields before, in
// Details' order), and sets it in t.Details.
type detailCheck struct {
	name  string
	check func(s *Submission, t *Threat, now time.Time) error
}

// Limits of the fields checked by their kind.
const (
	maxShortText = 256 // characters of a one-line text
	maxListItems = 100 // entries of a list
)

// checkText: one-line text of at most maxShortText characters, trimmed.
func checkText(name string, given *string, dst *string) error {
	if present(given) {
		v, err := text(name, strings.TrimSpace(*given), maxShortText, false)
		if err != nil {
			return err
		}
		*dst = v
	}
	return nil
}

// checkList: a list of at most maxListItems one-line texts.
func checkList(name string, given []string, dst *[]string) (err error) {
	*dst, err = stringList(name, given, maxListItems, maxShortText)
	return err
}

// checkTime: an ISO 8601 time no later than a day from now.
func checkTime(name string, given *string, now time.Time, dst **time.Time) (err error) {
	*dst, err = timestamp(name, given, now)
	return err
}

// checkCount: a whole number that is not negative.
func checkCount(name string, given *int64, dst **int64) error {
	if given != nil {
		if *given < 0 {
			return Invalid(name, "must not be negative")
		}
		n := *given
		*dst = &n
	}
	return nil
}

// formatTime writes a time as a client gives it (nil stays absent).
func formatTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// AsSubmission returns the submit fields of t, as a full submission.
func (t Threat) AsSubmission() Submission {
	rt, ri := string(t.ReportType), t.ResourceIdentifier
	s := Submission{ReportType: &rt, ResourceIdentifier: &ri}
	if t.Registry != "" {
		reg := t.Registry
		s.Registry = &reg
	}
	detailsToSubmission(t.Details, &s)
	return s
}
