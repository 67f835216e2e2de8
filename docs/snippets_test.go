// Package docs_test keeps the Go code the documentation shows compiled:
// every Go block in docs/ quotes a declaration of a file that builds and
// is tested, named in the comment line just above the block:
//
//	<!-- code: cmd/internal/sqliteplugin/sqliteplugin.go Open -->
//
// and the block must be that declaration, verbatim (doc comment left out).
// A page cannot drift from the code, and a snippet cannot be code that was
// never compiled.
package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var marker = regexp.MustCompile(`<!-- code: (\S+) (\w+) -->\n` + "```go\n")

func TestSnippetsAreCompiledCode(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		page := string(raw)
		quoted := map[int]bool{}
		for _, m := range marker.FindAllStringSubmatchIndex(page, -1) {
			start := m[1]
			end := strings.Index(page[start:], "```")
			if end < 0 {
				t.Errorf("%s: unterminated Go block", path)
				continue
			}
			quoted[start] = true
			file, name := page[m[2]:m[3]], page[m[4]:m[5]]
			want := declaration(t, filepath.Join("..", file), name)
			if got := strings.TrimSpace(page[start : start+end]); got != want {
				t.Errorf("%s: the Go block is not %s of %s; paste:\n%s", path, name, file, want)
			}
			checked++
		}
		for i := 0; ; {
			k := strings.Index(page[i:], "```go\n")
			if k < 0 {
				break
			}
			i += k + len("```go\n")
			if !quoted[i] {
				t.Errorf("%s:%d: a Go block without a <!-- code: file name --> line: show compiled code", path, strings.Count(page[:i], "\n"))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 3 {
		t.Fatalf("only %d quoted blocks found", checked)
	}
}

// declaration returns the source of the top-level function or type name
// in file, without its doc comment.
func declaration(t *testing.T, file, name string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		found := false
		switch d := d.(type) {
		case *ast.FuncDecl:
			found = d.Recv == nil && d.Name.Name == name
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == name {
					found = true
				}
			}
		}
		if found { // Pos is the func or type keyword: the doc comment is left out
			return string(src[fset.Position(d.Pos()).Offset:fset.Position(d.End()).Offset])
		}
	}
	t.Fatalf("%s has no declaration %s", file, name)
	return ""
}
