// Package stixtest validates STIX 2.1 output against the OASIS JSON schemas
// (santhosh-tekuri/jsonschema, draft 2020-12), for tests.
package stixtest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validator checks STIX objects against the OASIS JSON schemas.
type Validator struct{ schemas map[string]*jsonschema.Schema }

// NewValidator compiles the schemas in dir (a copy of
// oasis-open/cti-stix2-json-schemas/schemas).
func NewValidator(t testing.TB, schemaDir string) *Validator {
	t.Helper()
	c := jsonschema.NewCompiler()
	ids := map[string]string{}
	err := filepath.WalkDir(schemaDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		rel, _ := filepath.Rel(schemaDir, path)
		ids[filepath.ToSlash(rel)] = id
		return c.AddResource(id, doc)
	})
	if err != nil {
		t.Fatalf("loading the OASIS schemas from %s: %v", schemaDir, err)
	}
	v := &Validator{schemas: map[string]*jsonschema.Schema{}}
	for kind, file := range map[string]string{"bundle": "common/bundle.json", "identity": "sdos/identity.json", "malware": "sdos/malware.json",
		"indicator": "sdos/indicator.json", "relationship": "sros/relationship.json", "marking-definition": "common/marking-definition.json"} {
		s, err := c.Compile(ids[file])
		if err != nil {
			t.Fatalf("compiling %s: %v", file, err)
		}
		v.schemas[kind] = s
	}
	return v
}

// Validate checks a bundle and every object in it.
func (v *Validator) Validate(t testing.TB, raw []byte) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.schemas["bundle"].Validate(doc); err != nil {
		t.Fatalf("bundle invalid: %v", err)
	}
	for _, o := range doc.(map[string]any)["objects"].([]any) {
		obj := o.(map[string]any)
		s, ok := v.schemas[obj["type"].(string)]
		if !ok {
			t.Fatalf("no schema for %v", obj["type"])
		}
		if err := s.Validate(obj); err != nil {
			t.Fatalf("%s %s invalid: %v", obj["type"], obj["id"], err)
		}
	}
}

// ValidateObject checks one object against the schema of its type.
func (v *Validator) ValidateObject(obj map[string]any) error {
	s, ok := v.schemas[fmt.Sprint(obj["type"])]
	if !ok {
		return fmt.Errorf("no schema for type %v", obj["type"])
	}
	return s.Validate(obj)
}
