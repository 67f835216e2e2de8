package sdk_test

import (
	"os"
	"strings"
	"testing"

	"github.com/threatd/threatd/plugins/sdk"
)

func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		"@scope/name":                        "@scope/name",
		"@types/node":                        "@types/node",
		"@angular-devkit/build-angular":      "@angular-devkit/build-angular",
		"@SUM(1+1)*cmd|' /C calc'!A0":        "'@SUM(1+1)*cmd|' /C calc'!A0",
		"@scope/name(1)":                     "'@scope/name(1)",
		"@Scope/Name":                        "'@Scope/Name",
		"=HYPERLINK(\"http://x\",\"click\")": "'=HYPERLINK(\"http://x\",\"click\")",
		"+1+cmd|' /C calc'!A0":               "'+1+cmd|' /C calc'!A0",
		"-2+3":                               "'-2+3",
		"\t=1+1":                             "'\t=1+1",
		"lodash":                             "lodash",
		"https://evil.example/a=b":           "https://evil.example/a=b",
		"":                                   "",
	} {
		if got := sdk.CSVCell(in); got != want {
			t.Errorf("CSVCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExporterDoc keeps docs/plugins/exporters.md's code the compiled
// example: its first Go block is exportIOCs of example_test.go, verbatim.
func TestExporterDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/plugins/exporters.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```go\n")
	if !ok {
		t.Fatal("docs/plugins/exporters.md has no Go block")
	}
	block, _, _ = strings.Cut(block, "```")
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(src), "func exportIOCs(")
	end := strings.Index(string(src), "// End of the exporter")
	if start < 0 || end < start {
		t.Fatal("example_test.go lost its markers")
	}
	if want := strings.TrimSpace(string(src[start:end])); strings.TrimSpace(block) != want {
		t.Errorf("docs/plugins/exporters.md's Go block is not example_test.go's exportIOCs; paste:\n%s", want)
	}
}
