package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

// TestSystemdUnit: the unit in the repository passes systemd-analyze verify
// (with ExecStart pointed at the binary under test), keeps the settings
// docs/operations/systemd.md promises, and runs a command the binary
// accepts with the sample configuration beside it.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(testbin.ModuleRoot(), "docs", "operations", "systemd")
	unit, err := os.ReadFile(filepath.Join(dir, "threatd.service"))
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string][]string{}
	for _, line := range strings.Split(string(unit), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			settings[k] = append(settings[k], v)
		}
	}
	for k, want := range map[string]string{
		"KillMode": "mixed", "KillSignal": "SIGTERM", "Restart": "on-failure", "User": "threatd", "StateDirectory": "threatd",
		"ProtectSystem": "strict", "PrivateTmp": "yes", "NoNewPrivileges": "yes", "CapabilityBoundingSet": "",
		"ExecStart": "/usr/local/bin/threatd serve --config /etc/threatd/threatd.yaml",
	} {
		if got := settings[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s=%v, want %q", k, got, want)
		}
	}
	if path, err := exec.LookPath("systemd-analyze"); err == nil {
		local := filepath.Join(t.TempDir(), "threatd.service")
		os.WriteFile(local, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/threatd", testbin.Path("threatd"))), 0o644)
		if out, err := exec.Command(path, "verify", local).CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	} else {
		t.Log("systemd-analyze is not installed: the unit's syntax is not verified")
	}

	// The sample configuration, with its directories moved into the test's,
	// is one the binary accepts: migrate applies, and serve's own checks
	// pass as far as the listener (a config error would stop it earlier).
	cfg, err := os.ReadFile(filepath.Join(dir, "threatd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := newInstance(t, "")
	y := strings.NewReplacer("/var/lib/threatd", filepath.Join(in.dir, "data"), "/usr/local/lib/threatd/plugins", in.plugins,
		"0.0.0.0:8443", "127.0.0.1:0", "127.0.0.1:9464", "127.0.0.1:0").Replace(string(cfg))
	if err := os.WriteFile(in.config, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	in.mustCLI("migrate")
	d := in.serve()
	d.do("GET", "/readyz", "", "")
	if !strings.Contains(d.logText(), `"msg":"metrics listening"`) {
		t.Fatalf("the sample configuration serves no metrics:\n%s", d.logText())
	}
}
