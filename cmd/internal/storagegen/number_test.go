package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNumbersNeverReused: a field keeps its number while its name and type
// stay; a removed or retyped field's number is reserved, in the protocol
// written and after it is read back, and no new field ever takes it.
func TestNumbersNeverReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storage.proto")
	committed := "message Threat {\n  string ID = 1;\n  string Name = 2;\n  int64 Count = 3;\n  reserved 4;\n}\n"
	if err := os.WriteFile(path, []byte(committed), 0o644); err != nil {
		t.Fatal(err)
	}
	nums, err := readNumbers(path)
	if err != nil {
		t.Fatal(err)
	}
	msg := &message{Name: "Threat", Fields: []*field{
		{Name: "ID", Proto: "string"},            // kept: 1
		{Name: "Count", Proto: "string"},         // retyped: 3 reserved, takes 5
		{Name: "Published", Proto: "bool"},       // new: 6
		{Name: "Tags", Proto: "repeated string"}, // new: 7
	}} // Name removed: 2 reserved
	g := &gen{messages: []*message{msg}, numbers: nums}
	out := string(g.proto())
	for _, want := range []string{"  string ID = 1;\n", "  string Count = 5;\n", "  bool Published = 6;\n",
		"  repeated string Tags = 7;\n", "  reserved 2, 3, 4;\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the protocol lacks %q:\n%s", want, out)
		}
	}
	// Written and read back, then a field added: still nothing reused.
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if g.numbers, err = readNumbers(path); err != nil {
		t.Fatal(err)
	}
	msg.Fields = append(msg.Fields, &field{Name: "Name", Proto: "string"})
	out = string(g.proto())
	if !strings.Contains(out, "  string Name = 8;\n") || !strings.Contains(out, "  reserved 2, 3, 4;\n") {
		t.Errorf("after a round trip:\n%s", out)
	}
	if r := g.messages[0].Reserved; !slices.Equal(r, []int{2, 3, 4}) {
		t.Errorf("reserved %v", r)
	}
}
