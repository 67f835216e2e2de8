// Command fieldgen writes the code that carries a threat report's fields
// through every layer, from one table (core/fields.txt): core.Details and
// core.Submission with their per-field checks and conversions, the API
// record's fields, the plugin protocol's Details message and its
// conversion, the storage scan, and a test filler. Each field is handled by
// typed code for its kind, so a field the table and a layer disagree on is
// a compile error, not a panic at start-up. Run `make fields` (or `go
// generate ./core`) after editing the table; `make fields-check` (-check) fails
// when the committed code differs from what it writes.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// field is one line of the table.
type field struct {
	Name, Go, Kind, Label string
	Record                int // 0 for the identity fields
	Identity, Required    bool
	Rule, Private         bool
}

func (f field) optional() bool { return !f.Required }

// text is the field of recv as a string: a severity converted, text as is.
func (f field) text(recv string) string {
	if f.Kind == "severity" {
		return "string(" + recv + "." + f.Go + ")"
	}
	return recv + "." + f.Go
}

var kinds = map[string]struct {
	details, submission, constant string
}{
	"text":     {"string", "*string", "FieldText"},
	"severity": {"Severity", "*string", "FieldSeverity"},
	"list":     {"[]string", "[]string", "FieldList"},
	"time":     {"*time.Time", "*string", "FieldTime"},
	"count":    {"*int64", "*int64", "FieldCount"},
}

func main() {
	table := flag.String("table", "core/fields.txt", "the field table")
	root := flag.String("root", ".", "the repository's root")
	check := flag.Bool("check", false, "write nothing; fail naming each file that differs from what would be written")
	flag.Parse()
	fields, err := parse(*table)
	if err != nil {
		log.Fatal(err)
	}
	details := slices.DeleteFunc(slices.Clone(fields), func(f field) bool { return f.Identity })
	slices.SortFunc(details, func(a, b field) int { return a.Record - b.Record })
	out := map[string][]byte{
		"core/fields_gen.go":         coreFile(fields, details),
		"core/record/details_gen.go": recordFile(details),
		"storage/details_gen.go":     storageFile(details),
		"core/coretest/fill_gen.go":  fillFile(details),
	}
	var stale []string
	for path, src := range out {
		if strings.HasSuffix(path, ".go") {
			formatted, err := format.Source(src)
			if err != nil {
				log.Fatalf("%s: %v\n%s", path, err, src)
			}
			src = formatted
		}
		if *check {
			if have, err := os.ReadFile(filepath.Join(*root, path)); err != nil || !bytes.Equal(have, src) {
				stale = append(stale, path)
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(*root, path), src, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		log.Fatalf("not what %s writes (run make fields): %s", *table, strings.Join(stale, ", "))
	}
}

// parse reads the table and checks it: names, kinds and numbers unique and
// known, records numbered 1..n.
func parse(path string) ([]field, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var fields []field
	seen := map[string]bool{}
	records := map[int]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fail := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s", path, n, fmt.Sprintf(format, a...))
		}
		head, label, ok := strings.Cut(line, `"`)
		cols := strings.Fields(head)
		if !ok || len(cols) != 5 || !strings.HasSuffix(label, `"`) {
			return nil, fail("want: name go kind record flags \"label\"")
		}
		fl := field{Name: cols[0], Go: cols[1], Kind: cols[2], Label: strings.TrimSuffix(label, `"`)}
		if _, ok := kinds[fl.Kind]; !ok {
			return nil, fail("unknown kind %q", fl.Kind)
		}
		if seen[fl.Name] || seen[fl.Go] {
			return nil, fail("%s given twice", fl.Name)
		}
		seen[fl.Name], seen[fl.Go] = true, true
		for flag := range strings.SplitSeq(cols[4], ",") {
			switch flag {
			case "-":
			case "identity":
				fl.Identity = true
			case "required":
				fl.Required = true
			case "rule":
				fl.Rule = true
			case "private":
				fl.Private = true
			default:
				return nil, fail("unknown flag %q", flag)
			}
		}
		if fl.Identity {
			if cols[3] != "-" || fl.Kind != "text" {
				return nil, fail("an identity field is text, with no record place")
			}
		} else {
			if fl.Record, err = strconv.Atoi(cols[3]); err != nil || fl.Record < 1 || records[fl.Record] {
				return nil, fail("record place %q: want a number not given before", cols[3])
			}
			records[fl.Record] = true
			if fl.Kind == "severity" && !fl.Rule {
				return nil, fail("a severity field needs a rule")
			}
		}
		fields = append(fields, fl)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for i := 1; i <= len(records); i++ {
		if !records[i] {
			return nil, fmt.Errorf("%s: record places are not 1..%d (%d is missing)", path, len(records), i)
		}
	}
	return fields, nil
}

const header = "// Code generated by cmd/internal/fieldgen from core/fields.txt; DO NOT EDIT.\n\n"

type writer struct{ bytes.Buffer }

func (w *writer) p(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }

func coreFile(fields, details []field) []byte {
	var w writer
	w.p(header + "package core\n\nimport \"time\"\n")
	w.p(`// Details are a report's descriptive fields, in the order a record shows
// them. Each field's JSON name is its name everywhere: in requests
// (Submission has a field of the same name), records, revision patches, the
// storage column and the plugin protocol field. Empty strings and nil
// pointers mean "not given" (null in records, NULL in storage); every field
// but the required ones is optional (omitzero).
type Details struct {`)
	for _, f := range details {
		opt := ",omitzero"
		if !f.optional() {
			opt = ""
		}
		w.p("\t%s %s `json:\"%s%s\"`", f.Go, kinds[f.Kind].details, f.Name, opt)
	}
	w.p(`}

// Submission is the request body of the submit operation (spec §2.1): the
// identity fields, then Details' fields as a client gives them (timestamps
// as ISO 8601 text), under the same JSON names. The API decodes requests
// straight into it, revision patches are stored as its JSON, and the
// storage plugin protocol carries patches as that JSON. Nil pointers and
// nil slices are fields that were absent (or null); an empty slice is a
// field given as [] (omitzero keeps it, so a patch that clears tags
// survives a round trip).
type Submission struct {`)
	for _, f := range fields {
		w.p("\t%s %s `json:\"%s,omitzero\"`", f.Go, kinds[f.Kind].submission, f.Name)
	}
	w.p("}\n\n// DetailFields lists Details' fields in order.\nvar DetailFields = []DetailField{")
	for _, f := range details {
		w.p("\t{Name: %q, Kind: %s, Optional: %t},", f.Name, kinds[f.Kind].constant, f.optional())
	}
	w.p("}\n\n// SubmitFields lists Submission's fields in order, with typed access to each.\nvar SubmitFields = []SubmitField{")
	for _, f := range fields {
		acc := "text"
		switch f.Kind {
		case "list":
			acc = "list"
		case "count":
			acc = "count"
		}
		typ := kinds[f.Kind].submission
		w.p("\t{Name: %q, Label: %q, Kind: %s, Identity: %t, %s: func(s *Submission) *%s { return &s.%s }},",
			f.Name, f.Label, kinds[f.Kind].constant, f.Identity, acc, typ, f.Go)
	}
	w.p("}\n\n// detailChecks validate Details' fields in order: by a rule of their own,\n// or by their kind.\nvar detailChecks = []detailCheck{")
	for _, f := range details {
		if f.Rule {
			w.p("\t{%q, check%s},", f.Name, f.Go)
			continue
		}
		call := map[string]string{
			"text":  "checkText(%q, s.%s, &t.Details.%s)",
			"list":  "checkList(%q, s.%s, &t.Details.%s)",
			"time":  "checkTime(%q, s.%s, now, &t.Details.%s)",
			"count": "checkCount(%q, s.%s, &t.Details.%s)",
		}[f.Kind]
		w.p("\t{%q, func(s *Submission, t *Threat, now time.Time) error { return "+call+" }},", f.Name, f.Name, f.Go, f.Go)
	}
	w.p("}\n\n// detailsToSubmission sets d's fields in s, as a client would give them.\nfunc detailsToSubmission(d Details, s *Submission) {")
	for _, f := range details {
		switch f.Kind {
		case "text", "severity":
			val := f.text("d")
			if f.optional() {
				w.p("\tif d.%[1]s != \"\" {\n\t\tv := %[2]s\n\t\ts.%[1]s = &v\n\t}", f.Go, val)
			} else {
				w.p("\t%[3]s := %[2]s\n\ts.%[1]s = &%[3]s", f.Go, val, "v"+strconv.Itoa(f.Record))
			}
		case "list":
			w.p("\ts.%[1]s = append([]string{}, d.%[1]s...)", f.Go)
		case "time":
			w.p("\ts.%[1]s = formatTime(d.%[1]s)", f.Go)
		case "count":
			w.p("\ts.%[1]s = d.%[1]s", f.Go)
		}
	}
	w.p("}")
	return w.Bytes()
}

func recordFile(details []field) []byte {
	var w writer
	imp := "\"github.com/threatd/threatd/core\""
	if slices.ContainsFunc(details, func(f field) bool { return f.Kind == "time" }) {
		imp = "\"time\"\n\n\t" + imp
	}
	w.p(header + "package record\n\nimport (\n\t" + imp + "\n)\n")
	w.p("// details are a record's core.Details fields: text as null when\n// empty, lists as [] when empty.\ntype details struct {")
	for _, f := range details {
		typ, tag := kinds[f.Kind].details, f.Name
		if f.Kind == "text" || f.Kind == "severity" {
			typ = "*string"
		}
		if f.Private {
			tag += ",omitempty"
		}
		w.p("\t%s %s `json:\"%s\"`", f.Go, typ, tag)
	}
	w.p("}\n\nfunc newDetails(d core.Details) details {\n\treturn details{")
	for _, f := range details {
		switch f.Kind {
		case "text", "severity":
			w.p("\t\t%s: Nullable(%s),", f.Go, f.text("d"))
		case "list":
			w.p("\t\t%[1]s: nonNil(d.%[1]s),", f.Go)
		default:
			w.p("\t\t%[1]s: d.%[1]s,", f.Go)
		}
	}
	w.p("\t}\n}")
	w.p(`
// appendDetails writes the members of d's record as encoding/json writes
// them (newDetails, then json.Marshal) inside the record's object, each
// after a comma (the record's identity comes first: PublicJSON); false
// when a time cannot be written (encoding/json's error).`)
	w.p("func appendDetails(b []byte, d *core.Details) ([]byte, bool) {\n\tok := true")
	for _, f := range details {
		member := fmt.Sprintf("b = append(b, `,\"%s\":`...)", f.Name)
		var call string
		switch f.Kind {
		case "text", "severity":
			call = fmt.Sprintf("b = appendText(b, %s)", f.text("d"))
		case "list":
			call = fmt.Sprintf("b = appendList(b, d.%s)", f.Go)
		case "time":
			call = fmt.Sprintf("if b, ok = appendTime(b, d.%s); !ok {\n\t\treturn b, false\n\t}", f.Go)
		case "count":
			call = fmt.Sprintf("b = appendCount(b, d.%s)", f.Go)
		}
		if f.Private { // omitempty: left out when empty
			empty := map[string]string{"text": f.text("d") + ` != ""`, "severity": f.text("d") + ` != ""`, "list": "len(d." + f.Go + ") > 0"}[f.Kind]
			if empty == "" {
				empty = "d." + f.Go + " != nil"
			}
			w.p("\tif %s {\n\t\t%s\n\t\t%s\n\t}", empty, member, call)
			continue
		}
		w.p("\t%s\n\t%s", member, call)
	}
	w.p("\treturn b, ok\n}")
	return w.Bytes()
}

func storageFile(details []field) []byte {
	var w writer
	w.p(header + "package storage\n\nimport (\n\t\"database/sql\"\n\t\"fmt\"\n\n\t\"github.com/threatd/threatd/core\"\n)\n")
	w.p("// scanDetails sets d from its columns as getThreatsSQL reads them, one per\n// field of core.Details in order.\nfunc scanDetails(d *core.Details, cols []sql.Null[any]) error {")
	w.p("\tif len(cols) != %d {\n\t\treturn fmt.Errorf(\"%%d detail columns, want %d\", len(cols))\n\t}", len(details), len(details))
	for i, f := range details {
		fn, dst := map[string]string{"text": "scanText", "severity": "scanText", "list": "scanList", "time": "scanTime", "count": "scanCount"}[f.Kind], "&d."+f.Go
		if f.Kind == "severity" {
			dst = "(*string)(&d." + f.Go + ")"
		}
		w.p("\tif err := %s(%s, cols[%d]); err != nil {\n\t\treturn fmt.Errorf(\"%s: %%w\", err)\n\t}", fn, dst, i, f.Name)
	}
	w.p("\treturn nil\n}\n\n// storedDetails returns d as storage writes and returns it: lists never\n// nil (their columns are NOT NULL JSON), times in UTC.\nfunc storedDetails(d core.Details) core.Details {")
	for _, f := range details {
		switch f.Kind {
		case "list":
			w.p("\tif d.%[1]s == nil {\n\t\td.%[1]s = []string{}\n\t}", f.Go)
		case "time":
			w.p("\td.%[1]s = utcPtr(d.%[1]s)", f.Go)
		}
	}
	w.p("\treturn d\n}")
	return w.Bytes()
}

func fillFile(details []field) []byte {
	var w writer
	w.p(header + "package coretest\n\nimport (\n\t\"time\"\n\n\t\"github.com/threatd/threatd/core\"\n)\n")
	w.p(`// Fill gives every field of d that is still empty a value of its kind that
// passes core's checks by kind, so tests that carry every field cover a new
// one without a change (fields with rules of their own need a valid value
// set by the test).
func Fill(d *core.Details) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var n int64 = 42`)
	for _, f := range details {
		switch f.Kind {
		case "text", "severity":
			w.p("\tif d.%[1]s == \"\" {\n\t\td.%[1]s = \"x-%[2]s\"\n\t}", f.Go, f.Name)
		case "list":
			w.p("\tif d.%[1]s == nil {\n\t\td.%[1]s = []string{\"x-%[2]s\"}\n\t}", f.Go, f.Name)
		case "time":
			w.p("\tif d.%[1]s == nil {\n\t\td.%[1]s = &at\n\t}", f.Go)
		case "count":
			w.p("\tif d.%[1]s == nil {\n\t\td.%[1]s = &n\n\t}", f.Go)
		}
	}
	w.p("}")
	return w.Bytes()
}
