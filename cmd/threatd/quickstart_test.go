package main_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

// quickstartBlocks returns the ```sh blocks of a Markdown file that follow
// a "<!-- quickstart" comment, joined into one script, and the file's
// first ```sh block.
func quickstartBlocks(t *testing.T, doc string) (script, first string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testbin.ModuleRoot(), doc))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	marked, in, firstDone := false, false, false
	var cur []string
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line) // blocks may be indented in list items
		switch {
		case !in && strings.HasPrefix(trimmed, "<!-- quickstart"):
			marked = true
		case !in && trimmed == "```sh":
			in, cur = true, nil
		case in && trimmed == "```":
			in = false
			if !firstDone {
				first, firstDone = strings.Join(cur, "\n"), true
			}
			if marked {
				blocks = append(blocks, strings.Join(cur, "\n"))
			}
			marked = false
		case in:
			cur = append(cur, line)
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("%s has no quickstart blocks", doc)
	}
	return strings.Join(blocks, "\n"), first
}

// runQuickstart starts `make run` as a newcomer does (in a fresh
// directory, with the binaries `make test` built: GO=true makes the build
// step a no-op), then runs the quickstart blocks of docs, in order, with
// bash in a second shell, and returns their output. Only the port changes:
// the commands' 127.0.0.1:8443 becomes the one the test's daemon listens on.
func runQuickstart(t *testing.T, docs ...string) string {
	t.Helper()
	var scripts []string
	var first string
	for i, doc := range docs {
		script, f := quickstartBlocks(t, doc)
		scripts = append(scripts, script)
		if i == 0 {
			first = f
		}
	}
	doc, script := docs[0], strings.Join(scripts, "\n")
	testbin.Dir(t) // the binaries under test, built by `make test`
	dir := t.TempDir()
	links := map[string]string{
		filepath.Join(dir, "Makefile"): filepath.Join(testbin.ModuleRoot(), "Makefile"),
	}
	if doc == "docs/quickstart.md" {
		if clone := quickstartClone(t); clone != "" {
			dir, links = clone, map[string]string{}
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	links[filepath.Join(dir, "bin", "threatd")] = testbin.Path("threatd")
	links[filepath.Join(dir, "bin", "plugins")] = testbin.PluginDir(t)
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := append(os.Environ(), "THREATD_SERVER__LISTEN="+addr, "THREATD_METRICS__LISTEN=127.0.0.1:0")

	run := exec.Command("make", "run", "GO=true")
	if doc == "README.md" && !strings.HasPrefix(first, "make run ") {
		t.Fatalf("README.md's first block does not start with make run:\n%s", first)
	}
	run.Dir, run.Env = dir, env
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr lockedBuffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { run.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-run.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-run.Process.Pid, syscall.SIGKILL)
		}
	})
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(stderr.String(), `"msg":"index loaded"`); time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("make run exited: %v\n%s%s", run.ProcessState, stdout.String(), stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("make run did not serve within 60 s:\n%s", stderr.String())
		}
	}
	if !regexp.MustCompile(`(?m)^thd_\S+$`).MatchString(stdout.String()) {
		t.Fatalf("make run printed no token:\n%s", stdout.String())
	}

	sh := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(script, "127.0.0.1:8443", addr))
	sh.Dir, sh.Env = dir, env
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("%s's quickstart failed: %v\n%s", doc, err, out)
	}
	return string(out)
}

// quickstartClone runs docs/quickstart.md's steps 1 and 2 up to their
// `make run`: step 1 as apt-get's simulation (it needs root and changes
// the machine), step 2's git clone of this repository (its URL is the one
// placeholder) and cd. It returns the directory step 2 ends in, where the
// caller runs make run; "" when this tree is not a git repository.
func quickstartClone(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("apt-get"); err == nil {
		install := docSnippet(t, "docs/quickstart.md", "snippet", "qs-install")
		out, err := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(install, "apt-get install", "apt-get -s install")).CombinedOutput()
		if err != nil {
			t.Fatalf("step 1, simulated: %v\n%s", err, out)
		}
	}
	root := testbin.ModuleRoot()
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Logf("%s is not a git repository: step 2's clone is not run", root)
		return ""
	}
	lines := strings.Split(strings.TrimSpace(docSnippet(t, "docs/quickstart.md", "snippet", "qs-start")), "\n")
	if lines[len(lines)-1] != "make run" {
		t.Fatalf("step 2 does not end with make run:\n%s", strings.Join(lines, "\n"))
	}
	// The repository under a name that clones into threatd/, as the URL does.
	src := filepath.Join(t.TempDir(), "threatd.git")
	if err := os.Symlink(root, src); err != nil {
		t.Fatal(err)
	}
	script := strings.ReplaceAll(strings.Join(lines[:len(lines)-1], "\n"), "https://github.com/threatd/threatd.git", src) + "\npwd\n"
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("step 2: %v\n%s", err, out)
	}
	outLines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return outLines[len(outLines)-1]
}

// lockedBuffer is a buffer a child process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReadmeQuickstart: README.md's "Try it" commands, pasted in order
// into a fresh shell beside `make run`, work as written.
func TestReadmeQuickstart(t *testing.T) {
	t.Parallel()
	out := runQuickstart(t, "README.md")
	for _, want := range []string{`"status":"ok"`, `"email":"admin@localhost"`, "evil-pkg", `{"malicious":true`} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %s:\n%s", want, out)
		}
	}
}

// TestQuickstartDoc: docs/quickstart.md's steps, from the first token to a
// TIP reading TAXII and the Anomali feed.
func TestQuickstartDoc(t *testing.T) {
	t.Parallel()
	out := runQuickstart(t, "docs/quickstart.md")
	for _, want := range []string{`"status":"ready"`, `{"malicious":false`, `{"malicious":true`, "submitted ", "Verified threats",
		`"malware--`, `[domain-name:value = 'exfil.example.com']`, `"bundle--`} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %s:\n%s", want, out)
		}
	}
	// Step 6's TAXII page shows the report it promises, whole.
	page := out[strings.Index(out, `"more":`):]
	page = page[:strings.Index(page, `"bundle--`)]
	if !strings.HasPrefix(page, `"more":false`) || !strings.Contains(page, `"type":"malware"`) || !strings.Contains(page, "exfil.example.com") {
		t.Errorf("the TAXII page of step 6 is not the report, whole:\n%s", page)
	}
}

// TestAPIDocExamples: the examples of the API pages, pasted after the
// README's: a submission kept in $ID, its review by a named reviewer, two
// changes to it, a paid token and the threat feed, the account, checks
// (one and a batch), the latest reports and the health.
func TestAPIDocExamples(t *testing.T) {
	t.Parallel()
	out := runQuickstart(t, "README.md", "docs/api/submit.md", "docs/api/modify.md", "docs/api/paid.md",
		"docs/api/account.md", "docs/api/check-malicious.md", "docs/api/query-latest.md", "docs/api/healthz.md")
	for _, want := range []string{`"status":"pending"`, "Rita Reviewer", `"revision":1`, `"revision":2`, `"threats":[`, "npmrc-stealer",
		`"tier":"paid"`, `"resource_identifier":"lodash","ecosystem":"npm","threat_count":0`, `{"index":2,"error":"report_type:`, `"count":2`, `"status":"ok"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %s:\n%s", want, out)
		}
	}
}
