package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsStandAlone: the documentation, the README and the CLI's help
// never send a reader to a file they do not have: the project's contract
// and style guide live outside the repository (docs/ carries what users and
// client authors need of them), and so does the reference data.
func TestDocsStandAlone(t *testing.T) {
	outside := []string{"CONTRACT.md", "STYLE.md", "TOOLING.md", "shared/spec", "threat-intel-api.md"}
	var files []string
	for _, root := range []string{".", "../cmd/threatd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.HasSuffix(path, ".md") || root != "." && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	files = append(files, "../README.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range outside {
			if i := strings.Index(string(b), name); i >= 0 {
				t.Errorf("%s:%d cites %s, which is not in the repository", f, strings.Count(string(b[:i]), "\n")+1, name)
			}
		}
	}
	if len(files) < 40 {
		t.Fatalf("only %d files read", len(files))
	}
}
