// Package stixtest validates STIX 2.1 output against the OASIS JSON schemas
// (santhosh-tekuri/jsonschema, draft 2020-12), for tests.
package stixtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/threatd/threatd/core/coretest"
)

// Validator checks STIX objects against the OASIS JSON schemas.
type Validator struct {
	schemas map[string]*jsonschema.Schema
	// defined are the property names each type's schema defines: any
	// other is a custom property, which STIX 2.1 deprecates in favour of
	// extensions (the OASIS validator's warning {401}).
	defined map[string]map[string]bool
}

// SchemaSet is the reference data set of the OASIS schemas (a copy of
// oasis-open/cti-stix2-json-schemas/schemas; coretest.Reference).
const SchemaSet = "stix2-json-schemas"

// Required returns a validator of the OASIS schemas, skipping the test
// when they are missing (coretest.Reference).
func Required(t testing.TB) *Validator {
	t.Helper()
	return NewValidator(t, coretest.Reference(t, SchemaSet))
}

// Optional returns a validator of the OASIS schemas, or nil (after one log
// line) when they are missing: a nil Validator validates nothing, so a
// test that checks more than its STIX still runs.
func Optional(t testing.TB) *Validator {
	t.Helper()
	dir := coretest.OptionalReference(t, SchemaSet)
	if dir == "" {
		return nil
	}
	return NewValidator(t, dir)
}

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
	v := &Validator{schemas: map[string]*jsonschema.Schema{}, defined: map[string]map[string]bool{}}
	for kind, file := range map[string]string{"bundle": "common/bundle.json", "identity": "sdos/identity.json", "malware": "sdos/malware.json",
		"indicator": "sdos/indicator.json", "relationship": "sros/relationship.json", "marking-definition": "common/marking-definition.json",
		"extension-definition": "common/extension-definition.json", "sighting": "sros/sighting.json", "campaign": "sdos/campaign.json"} {
		s, err := c.Compile(ids[file])
		if err != nil {
			t.Fatalf("compiling %s: %v", file, err)
		}
		v.schemas[kind] = s
		v.defined[kind] = map[string]bool{}
		if err := collectProperties(filepath.Join(schemaDir, file), v.defined[kind], map[string]bool{}); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// collectProperties adds the names of the properties the schema file
// defines, following its $refs to other files (core.json, properties.json).
func collectProperties(path string, into, seen map[string]bool) error {
	if seen[path] {
		return nil
	}
	seen[path] = true
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var walk func(n any, top bool) error
	walk = func(n any, top bool) error {
		m, ok := n.(map[string]any)
		if !ok {
			if list, ok := n.([]any); ok {
				for _, e := range list {
					if err := walk(e, top); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if ref, ok := m["$ref"].(string); ok && top && !strings.HasPrefix(ref, "#") {
			if err := collectProperties(filepath.Join(filepath.Dir(path), ref), into, seen); err != nil {
				return err
			}
		}
		if props, ok := m["properties"].(map[string]any); ok && top {
			for name := range props {
				into[name] = true
			}
		}
		// Only the object's own level: allOf, anyOf, oneOf and then/else
		// branches describe it; properties' own schemas do not.
		for _, k := range []string{"allOf", "anyOf", "oneOf", "then", "else"} {
			if err := walk(m[k], top); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(doc, true)
}

// CustomProperties returns the top-level properties of obj that its type's
// schema does not define, sorted.
func (v *Validator) CustomProperties(obj map[string]any) []string {
	defined := v.defined[fmt.Sprint(obj["type"])]
	var out []string
	for k := range obj {
		if !defined[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Validate checks a bundle and every object in it.
func (v *Validator) Validate(t testing.TB, raw []byte) {
	t.Helper()
	if v == nil {
		return
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	// The OASIS bundle schema predates extension-definition (STIX 2.1
	// CS02 §7.3): it does not list the type, and its catch-all for custom
	// objects (oneOf core, cyber-observable-core) matches an SDO-like
	// object twice, so it refuses every extension definition. The bundle is
	// checked without them; each is checked against its own schema below.
	bundle := map[string]any{}
	for k, val := range doc.(map[string]any) {
		bundle[k] = val
	}
	var rest []any
	for _, o := range doc.(map[string]any)["objects"].([]any) {
		if o.(map[string]any)["type"] != "extension-definition" {
			rest = append(rest, o)
		}
	}
	bundle["objects"] = rest
	if err := v.schemas["bundle"].Validate(bundle); err != nil {
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
		if custom := v.CustomProperties(obj); len(custom) > 0 {
			t.Fatalf("%s %s has custom properties %v: STIX 2.1 wants an extension instead", obj["type"], obj["id"], custom)
		}
	}
}

// ValidateObject checks one object against the schema of its type.
func (v *Validator) ValidateObject(obj map[string]any) error {
	if v == nil {
		return nil
	}
	s, ok := v.schemas[fmt.Sprint(obj["type"])]
	if !ok {
		return fmt.Errorf("no schema for type %v", obj["type"])
	}
	if err := s.Validate(obj); err != nil {
		return err
	}
	if custom := v.CustomProperties(obj); len(custom) > 0 {
		return fmt.Errorf("custom properties %v: STIX 2.1 wants an extension instead", custom)
	}
	return nil
}
