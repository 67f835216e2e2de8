package coretest

import (
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema compiles the JSON schema in the file at path; assertFormat makes
// its "format" keywords assertions (they are annotations by default).
func Schema(t testing.TB, path string, assertFormat bool) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	if assertFormat {
		c.AssertFormat()
	}
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}
