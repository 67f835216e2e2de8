package core_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The shape rules of docs/architecture.md, checked over the whole module
// (its root is the parent of core/).

// maxLines is the most lines a hand-written Go file has: past it, a file
// holds more than one concern and is split by concern.
const maxLines = 450

// generated is the header of a generated Go file
// (https://go.dev/s/generatedcode).
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// goFiles walks the module's Go files (not .git, not testdata).
func goFiles(t *testing.T, fn func(path string, src []byte)) {
	t.Helper()
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "testdata" || name == "node_modules" || name == "bin" || name == "data" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(strings.TrimPrefix(path, "../")), src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNoFileOverMaxLines: no hand-written Go file, tests included, is over
// maxLines lines.
func TestNoFileOverMaxLines(t *testing.T) {
	t.Parallel()
	n := 0
	goFiles(t, func(path string, src []byte) {
		n++
		if generated.Match(src) {
			return
		}
		if lines := bytes.Count(src, []byte("\n")); lines > maxLines {
			t.Errorf("%s: %d lines (at most %d): split it by concern", path, lines, maxLines)
		}
	})
	if n < 100 {
		t.Fatalf("walked only %d Go files", n)
	}
}

// TestExtractIOCsHasOneCaller: a report's indicators are derived in one
// production place (core.Derive, when a report is stored); every other
// reader takes the stored ones. A second caller would let two copies of
// the same report's indicators drift apart.
func TestExtractIOCsHasOneCaller(t *testing.T) {
	t.Parallel()
	call := regexp.MustCompile(`\bExtractIOCs\(`)
	var callers []string
	goFiles(t, func(path string, src []byte) {
		if strings.HasSuffix(path, "_test.go") || generated.Match(src) {
			return
		}
		sc := bufio.NewScanner(bytes.NewReader(src))
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(text, "//") || strings.HasPrefix(text, "func ExtractIOCs(") {
				continue
			}
			if call.MatchString(text) {
				callers = append(callers, path)
			}
		}
	})
	if len(callers) != 1 || callers[0] != "core/publish.go" {
		t.Fatalf("ExtractIOCs is called from %v; its one production caller is core/publish.go (core.Derive): read the stored indicators instead", callers)
	}
}

// TestArchitectureNamesEveryPackage: docs/architecture.md names every
// package of the module, as `path` in back quotes.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 30 {
		t.Fatalf("go list named too few packages: %v", pkgs)
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, mod), strings.TrimSuffix(mod, "/"))
		if rel == "" {
			continue
		}
		if !bytes.Contains(doc, []byte("`"+rel+"`")) {
			t.Errorf("docs/architecture.md does not name the package `%s`", rel)
		}
	}
}

// TestCoreRootHoldsTheDomainOnly: the core package's store interfaces are
// the domain's own (accounts, reports and review, published, imports,
// operations); a feature declares its types and its store in its own
// package, and core/port assembles the port. The next feature adds a
// folder, not files to the core root.
func TestCoreRootHoldsTheDomainOnly(t *testing.T) {
	t.Parallel()
	domain := map[string]bool{"Store": true, "AccountStore": true, "ReportStore": true, "PublishedStore": true, "ImportStore": true, "OperationsStore": true, "IngestStore": true}
	iface := regexp.MustCompile(`(?m)^type (\w+Store) interface`)
	paths, _ := filepath.Glob("*.go")
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range iface.FindAllSubmatch(src, -1) {
			if !domain[string(m[1])] {
				t.Errorf("core/%s declares %s: a feature's store belongs in the feature's package, assembled in core/port", p, m[1])
			}
		}
	}
}
