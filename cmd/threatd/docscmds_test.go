package main_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

// threatdCommand finds a threatd command line in Markdown: the word threatd,
// a subcommand, then the rest of the code span or line.
var threatdCommand = regexp.MustCompile("(?:^|[\\s(`/])threatd ((?:serve|migrate|bootstrap|user|token|review|import|export|copy-storage|version)\\b[^`\\n]*)")

// TestDocsCommandsExist: every threatd command that README.md and docs/
// write, in code spans and shell blocks, is a command of the binary, and
// every --flag it gives is one that command takes (`threatd … --help`).
func TestDocsCommandsExist(t *testing.T) {
	t.Parallel()
	testbin.Dir(t)
	root := testbin.ModuleRoot()
	files := []string{filepath.Join(root, "README.md")}
	filepath.WalkDir(filepath.Join(root, "docs"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	help := map[string]string{} // subcommand path → its --help
	helpOf := func(path []string) (string, bool) {
		key := strings.Join(path, " ")
		if h, ok := help[key]; ok {
			return h, h != ""
		}
		out, err := exec.Command(testbin.Path("threatd"), append(path, "--help")...).CombinedOutput()
		h := string(out)
		if err != nil || !strings.Contains(h, "Usage:") {
			h = ""
		}
		help[key] = h
		return h, h != ""
	}
	word := regexp.MustCompile(`^[a-z][a-z-]*$`)
	flag := regexp.MustCompile(`(?:^|\s)(--[a-z][a-z-]*)`)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range threatdCommand.FindAllStringSubmatch(string(b), -1) {
			line := m[1]
			// Alternatives in tables ("list|set-tier") and prose after a
			// command are not commands: stop at |, ;, #, ) and quotes.
			if i := strings.IndexAny(line, "|;#)\"'"); i >= 0 {
				line = line[:i]
			}
			fields := strings.Fields(line)
			var path []string
			for _, w := range fields {
				if !word.MatchString(w) {
					break
				}
				path = append(path, w)
			}
			// The longest prefix that is a command: words after it are arguments.
			for len(path) > 1 {
				if h, ok := helpOf(path); ok && (len(path) == len(fields) || !strings.Contains(h, "Available Commands:")) {
					break
				}
				path = path[:len(path)-1]
			}
			h, ok := helpOf(path)
			if !ok {
				t.Errorf("%s: `threatd %s` is not a command", rel, strings.Join(path, " "))
				continue
			}
			if strings.Contains(h, "Available Commands:") && len(path) == 1 && path[0] != "serve" && len(fields) > 1 && word.MatchString(fields[1]) {
				t.Errorf("%s: `threatd %s`: %q is not a subcommand of %s", rel, m[1], fields[1], path[0])
				continue
			}
			for _, fm := range flag.FindAllStringSubmatch(line, -1) {
				if !strings.Contains(h, fm[1]+" ") && !strings.Contains(h, fm[1]+"\n") {
					t.Errorf("%s: `threatd %s`: %s is not a flag of `threatd %s`", rel, strings.TrimSpace(m[1]), fm[1], strings.Join(path, " "))
				}
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("only %d threatd commands found in the docs", checked)
	}
	t.Logf("%d threatd commands in %d files checked", checked, len(files))
}

// TestReadmeNamesEveryPlugin: README.md's `make build` row names every
// plugin the build makes, and no other.
func TestReadmeNamesEveryPlugin(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(testbin.ModuleRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `make build` \\|.*$").FindString(string(b))
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`(?:bin/plugins/)?(threatd-[a-z]+-)(?:\\{([a-z,]+)\\}|([a-z]+))`").FindAllStringSubmatch(row, -1) {
		for _, s := range strings.Split(m[2]+m[3], ",") {
			named[m[1]+s] = true
		}
	}
	entries, err := os.ReadDir(testbin.PluginDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !named[e.Name()] {
			t.Errorf("README.md's make build row does not name the plugin %s", e.Name())
		}
		delete(named, e.Name())
	}
	for n := range named {
		t.Errorf("README.md's make build row names %s, which the build does not make", n)
	}
}
