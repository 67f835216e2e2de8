package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/analysis"
)

// realModules samples n module zips of the Go module cache: the modules
// threatd itself builds with (go build downloaded them), evenly spaced in
// path order, so that the sample is the same on every machine with the
// same go.sum.
func realModules(t *testing.T, n int) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env GOMODCACHE: %v", err)
	}
	root := filepath.Join(strings.TrimSpace(string(out)), "cache", "download")
	var zips []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".zip") {
			if fi, err := d.Info(); err == nil && fi.Size() < 16<<20 {
				zips = append(zips, p)
			}
		}
		return nil
	})
	if len(zips) == 0 {
		t.Skip("no module zips in the Go module cache")
	}
	sort.Strings(zips)
	if len(zips) <= n {
		return zips
	}
	sample := make([]string, 0, n)
	for i := range n {
		sample = append(sample, zips[i*len(zips)/n])
	}
	return sample
}

// TestRealGoModulesAreClean: real Go modules (a sample of those in the
// module cache, among them threatd's own dependencies) are not
// suspicious: the false-positive guard on real code that runs here with
// no network. docs/analysis.md gives the wider measurement.
func TestRealGoModulesAreClean(t *testing.T) {
	t.Parallel()
	a := newAnalyzer()
	mods := realModules(t, 40)
	for _, m := range mods {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(m)))+"@"+strings.TrimSuffix(filepath.Base(m), ".zip"), func(t *testing.T) {
			t.Parallel()
			res := analyse(t, a, "go", m, "")
			if res.Verdict == analysis.VerdictSuspicious {
				t.Errorf("%s is suspicious: %+v", m, res.Findings)
			}
		})
	}
	t.Logf("%d real Go modules analysed", len(mods))
}
