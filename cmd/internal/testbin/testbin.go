// Package testbin gives tests the real threatd binaries: the ones `make
// build` wrote (THREATD_TEST_BIN=dir, as `make test` sets it), or, when that
// is unset, binaries built once per test process into a temporary directory.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/threatd/threatd/core/coretest"
)

var (
	once     sync.Once
	binDir   string
	buildErr error
)

// Commands are the binaries under cmd/ that tests use.
var Commands = []string{"threatd", "threatd-storage-sqlite", "threatd-storage-postgres", "threatd-exporter-stix", "threatd-exporter-anomali", "threatd-exporter-csv", "threatd-exporter-osv", "threatd-exporter-misp", "threatd-source-osv", "threatd-source-urlhaus", "threatd-source-threatfox", "threatd-source-datadog"}

// Analyzer is the rules analyzer plugin: it links libyara (libyara-dev),
// so it is built only where that is installed (NeedAnalyzer).
const Analyzer = "threatd-analyzer-rules"

// Dir returns a directory holding threatd and plugins/ with every plugin.
func Dir(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if d := os.Getenv("THREATD_TEST_BIN"); d != "" {
			binDir = d
			return
		}
		binDir, buildErr = build()
	})
	if buildErr != nil {
		t.Fatalf("building binaries: %v", buildErr)
	}
	for _, c := range Commands {
		if _, err := os.Stat(Path(c)); err != nil {
			t.Fatalf("binary %s missing (run `make build`, or unset THREATD_TEST_BIN): %v", c, err)
		}
	}
	return binDir
}

// Path returns where binary name lives inside Dir.
func Path(name string) string {
	if name == "threatd" {
		return filepath.Join(binDir, "threatd")
	}
	return filepath.Join(binDir, "plugins", name)
}

// PluginDir returns the plugin directory inside Dir.
func PluginDir(t testing.TB) string { return filepath.Join(Dir(t), "plugins") }

// ModuleRoot returns the repository root (where go.mod is).
func ModuleRoot() string { return coretest.ModuleRoot() }

func build() (string, error) {
	dir, err := os.MkdirTemp("", "threatd-testbin-")
	if err != nil {
		return "", err
	}
	for _, c := range append(Commands, Analyzer) {
		if c == Analyzer && !haveLibyara() {
			continue
		}
		out := filepath.Join(dir, "plugins", c)
		if c == "threatd" {
			out = filepath.Join(dir, c)
		}
		if err := Build("./cmd/"+c, out); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// Build compiles the package at pkg (relative to the module root) into out.
func Build(pkg, out string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = ModuleRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// haveLibyara says whether libyara's header is installed.
func haveLibyara() bool {
	_, err := os.Stat("/usr/include/yara.h")
	return err == nil
}

// NeedAnalyzer returns Dir, or skips t (fails it under CI=true) when the
// rules analyzer plugin was not built: libyara-dev is not installed.
func NeedAnalyzer(t testing.TB) string {
	t.Helper()
	d := Dir(t)
	if _, err := os.Stat(Path(Analyzer)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (CI requires it: install libyara-dev, then make build)", Analyzer)
		}
		t.Skipf("%s is not built: package analysis needs libyara-dev (apt-get install libyara-dev, then make build)", Analyzer)
	}
	return d
}
