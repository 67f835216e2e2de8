package main_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/core/coretest"
)

// TestReadOnlyCommandsRefuseAMissingDatabase: a command run where there is
// no database (the wrong directory, a typo in data_dir) says so and creates
// nothing; it used to answer from a new, empty database it had just
// created. serve, migrate and bootstrap create one.
func TestReadOnlyCommandsRefuseAMissingDatabase(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	in.noAutoMigrate = true
	data := filepath.Join(in.dir, "data")
	for _, args := range [][]string{
		{"user", "list"}, {"token", "list", "--email", "a@example.com"}, {"review", "list"},
		{"review", "show", "0196a1b2-0000-7000-8000-000000000000"}, {"export", "osv", t.TempDir()}, {"user", "add", "--email", "a@example.com"},
	} {
		r := in.cli(args...)
		if r.code == 0 || !strings.Contains(r.stderr, "sqlite: the database "+filepath.Join(data, "threatd.db")+" does not exist: run threatd migrate") {
			t.Fatalf("%v without a database: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("%v created %s", args, data)
		}
	}
	if out := in.mustCLI("migrate"); !strings.Contains(out, "schema up to date (0 users") {
		t.Fatalf("migrate: %s", out)
	}
	in.mustCLI("user", "list")
}

// TestCLIUsageAndPortErrors: a wrong flag prints the command's usage line;
// an address in use names server.listen and how to set it (it said only
// "bind: address already in use").
func TestCLIUsageAndPortErrors(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	r := in.cli("serve", "--listn", "127.0.0.1:1")
	if r.code == 0 || !strings.Contains(r.stderr, "unknown flag: --listn\nUsage: threatd serve [flags]\nRun 'threatd serve --help' for its flags") {
		t.Fatalf("a wrong flag: exit %d\n%s", r.code, r.stderr)
	}
	r = in.cli("review", "list", "--limt", "2")
	if r.code == 0 || !strings.Contains(r.stderr, "Usage: threatd review list [--limit N]") {
		t.Fatalf("a wrong flag of a subcommand: exit %d\n%s", r.code, r.stderr)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	r = in.cli("serve", "--listen", addr)
	if r.code == 0 || !strings.Contains(r.stderr, "server.listen "+addr+": bind: address already in use (choose another address with --listen, THREATD_SERVER__LISTEN or server.listen") {
		t.Fatalf("serve on a taken port: exit %d\n%s", r.code, r.stderr)
	}
}

// TestMakeInstallRunsAnywhere: make install copies what make build built
// (it compiled, and failed under sudo without Go on root's PATH), and the
// installed threatd finds its plugins from where it is installed
// (<prefix>/lib/threatd/plugins) when run from any other directory with a
// configuration that does not name plugins.dir.
func TestMakeInstallRunsAnywhere(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	bin := testbin.Dir(t)
	dest := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "install", "DESTDIR="+dest, "PREFIX=/usr/local", "BIN="+bin, "GO=false")
	cmd.Dir = coretest.ModuleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	installed := filepath.Join(dest, "usr", "local", "bin", "threatd")
	for _, p := range testbin.Commands[1:] {
		if _, err := os.Stat(filepath.Join(dest, "usr", "local", "lib", "threatd", "plugins", p)); err != nil {
			t.Fatalf("plugin %s not installed: %v", p, err)
		}
	}
	elsewhere := t.TempDir()
	config := filepath.Join(elsewhere, "threatd.yaml")
	if err := os.WriteFile(config, []byte("data_dir: "+filepath.Join(elsewhere, "state")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(installed, args...)
		c.Dir = elsewhere
		c.Env = append(os.Environ(), "THREATD_METRICS__LISTEN=")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("installed threatd %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("version"); !strings.HasPrefix(out, "threatd ") {
		t.Fatalf("version: %s", out)
	}
	run("migrate", "--config", config)
	run("user", "add", "--email", "ops@example.com", "--config", config)
	if out := run("user", "list", "--config", config); !strings.Contains(out, "ops@example.com") {
		t.Fatalf("user list: %s", out)
	}
	// Without the binaries make build writes, make install says so and
	// compiles nothing.
	cmd = exec.Command("make", "--no-print-directory", "install", "DESTDIR="+t.TempDir(), "BIN="+t.TempDir(), "GO=false")
	cmd.Dir = coretest.ModuleRoot()
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "is missing: run make build first") {
		t.Fatalf("make install without a build: %v\n%s", err, out)
	}
}

// TestBareCloneUnitTier: a clone of the repository with nothing beside it
// (no ../shared) passes the unit tier of make test (make test-unit) with
// CI unset: the tests that need reference data skip with one line saying
// what is missing and how to get it, the others generate their inputs.
// Where this run has no reference data itself, it is such a clone: the
// test would run the same tests again, so it is left out.
func TestBareCloneUnitTier(t *testing.T) {
	t.Parallel()
	if coretest.FindReference("osv-malicious-full") == "" && os.Getenv("CI") != "true" {
		t.Skip("this run has no reference data: it is itself the bare clone this test makes")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if _, err := os.Stat(filepath.Join(coretest.ModuleRoot(), ".git")); err != nil {
		t.Skip("not a git checkout")
	}
	clone := filepath.Join(t.TempDir(), "threatd")
	if out, err := exec.Command("git", "clone", "--quiet", "--no-hardlinks", coretest.ModuleRoot(), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	cmd := exec.Command("make", "--no-print-directory", "test-unit", "GOTESTFLAGS=-v")
	cmd.Dir = clone
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "CI" && !strings.HasPrefix(k, "THREATD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make test-unit in a bare clone: %v\n%s", err, tail(out, 4000))
	}
	for _, want := range []string{"reference data stix2-json-schemas not found", "reference data osv-malicious-full not found", "run `make reference-data` or set THREATD_REFERENCE_DIR"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("make test-unit in a bare clone does not say %q:\n%s", want, tail(out, 4000))
		}
	}
	if strings.Contains(string(out), "--- FAIL") {
		t.Fatalf("failures:\n%s", tail(out, 4000))
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
