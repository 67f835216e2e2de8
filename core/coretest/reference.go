// Package coretest has helpers for tests of the layers that carry a
// report's fields.
package coretest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Reference data is public material some tests check threatd against: the
// OASIS STIX 2.1 JSON schemas (stix2-json-schemas), the OSV schema
// (osv-schema), 300 real OSV malicious-package reports
// (osv-malicious-sample) and 29,604 of them as OSV publishes them
// (osv-malicious-full). It is not in the repository. A test finds it, in
// this order, in:
//
//  1. $THREATD_REFERENCE_DIR/<name>;
//  2. ../shared/reference/<name> beside the repository (CI machines);
//  3. .reference/<name> in the repository, where `make reference-data`
//     fetches the pinned public sources.
//
// When none has it, the test is skipped with one line saying what is
// missing and how to get it; under CI=true a missing reference fails it.

// ReferenceEnv names the directory that holds the reference data sets.
const ReferenceEnv = "THREATD_REFERENCE_DIR"

// ReferencePlaces are the directories searched for reference data, in order.
func ReferencePlaces() []string {
	var out []string
	if d := os.Getenv(ReferenceEnv); d != "" {
		out = append(out, d)
	}
	root := ModuleRoot()
	return append(out, filepath.Join(root, "..", "shared", "reference"), filepath.Join(root, ".reference"))
}

// FindReference returns the directory of the reference data set name, or
// "" when no place has it.
func FindReference(name string) string {
	for _, d := range ReferencePlaces() {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p
		}
	}
	return ""
}

// Reference returns the directory of the reference data set name; when it
// is missing the test is skipped (failed under CI=true).
func Reference(t testing.TB, name string) string {
	t.Helper()
	return reference(t, name, t.Skip)
}

// OptionalReference returns the directory of the reference data set name,
// or "" after logging one line when it is missing (failing the test under
// CI=true): for a check the test can do without, such as validating its
// STIX objects against the OASIS schemas.
func OptionalReference(t testing.TB, name string) string {
	t.Helper()
	return reference(t, name, func(args ...any) { t.Log(args[0].(string) + "; that check is left out") })
}

// reference finds name, or tells missing (a skip or a log line) why not.
func reference(t testing.TB, name string, missing func(args ...any)) string {
	t.Helper()
	if p := FindReference(name); p != "" {
		return p
	}
	msg := MissingReference(name)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: reference data is required)")
	}
	missing(msg)
	return ""
}

// MissingReference is the one line a test gives when reference data is
// missing: what, where it looked, and how to get it.
func MissingReference(name string) string {
	return "reference data " + name + " not found (looked in " + strings.Join(ReferencePlaces(), ", ") +
		"): run `make reference-data` or set " + ReferenceEnv
}

// ModuleRoot returns the repository root (where go.mod is).
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// OSVArchives returns the all.zip of each ecosystem in osv-malicious-full
// (the 29,604 real reports as OSV publishes them); when the data set is
// missing the test is skipped (failed under CI=true), and it fails when
// the data set holds no archive.
func OSVArchives(t testing.TB) []string {
	t.Helper()
	dir := Reference(t, "osv-malicious-full")
	zips, _ := filepath.Glob(filepath.Join(dir, "*", "all.zip"))
	if len(zips) == 0 {
		t.Fatalf("no all.zip under %s", dir)
	}
	return zips
}
