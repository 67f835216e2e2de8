package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/fakeregistry"
	"github.com/threatd/threatd/cmd/internal/testbin"
)

// TestScan: a package-lock.json made by the real npm and a CycloneDX SBOM
// made by CycloneDX's real generator from it are scanned by threatd scan
// (against the storage, and through a daemon) and by POST /scan; the
// planted malicious package is found at its line, the SARIF passes the
// SARIF 2.1.0 schema, osv-scanner reading threatd's OSV export finds the
// same, the exit status says what happened, and bad input is refused.
func TestScan(t *testing.T) {
	t.Parallel()
	tools := scanTools(t)
	schema := sarifSchema(t, tools)
	scanner := osvScanner(t)
	npm := needTool(t, "npm")

	u := fakeregistry.New(t)
	u.NPMPackage(t, "scan-clean", "1.0.0", "1.0.0")
	u.NPMPackage(t, "scan-evil", "1.0.1", "1.0.0", "1.0.1")
	u.NPMPackageDeps(t, "scan-lib", "2.0.0", map[string]string{"scan-evil": "1.0.1"}, "2.0.0")

	// The real npm writes the lockfile, resolving against the upstream.
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "package.json"), []byte(`{"name":"shop","version":"1.0.0","private":true,
  "dependencies":{"scan-clean":"^1.0.0","scan-lib":"2.0.0"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	npmrc := filepath.Join(home, ".npmrc")
	os.WriteFile(npmrc, []byte("registry="+u.Srv.URL+"/\nfund=false\naudit=false\nupdate-notifier=false\ncache="+filepath.Join(home, "cache")+"\n"), 0o600)
	npmEnv := []string{"HOME=" + home, "NPM_CONFIG_USERCONFIG=" + npmrc}
	if out, ok := client(t, proj, npmEnv, npm, "install", "--package-lock-only", "--ignore-scripts"); !ok {
		t.Fatalf("npm install --package-lock-only:\n%s", out)
	}
	lock := readFile(t, filepath.Join(proj, "package-lock.json"))
	evilLine := lineOf(t, lock, `"node_modules/scan-evil"`)
	// CycloneDX's own generator makes the SBOM from the same project.
	if out, ok := client(t, proj, append(npmEnv, "PATH="+filepath.Dir(npm)+":"+os.Getenv("PATH")), "node",
		filepath.Join(tools, "@cyclonedx", "cyclonedx-npm", "bin", "cyclonedx-npm-cli.js"),
		"--package-lock-only", "--output-format", "JSON", "--output-file", "bom.cdx.json"); !ok {
		t.Fatalf("cyclonedx-npm:\n%s", out)
	}
	bom := readFile(t, filepath.Join(proj, "bom.cdx.json"))
	if !strings.Contains(bom, `"specVersion": "1.`) || !strings.Contains(bom, "pkg:npm/scan-evil@1.0.1") {
		t.Fatalf("cyclonedx-npm wrote:\n%s", bom)
	}
	bomLines := strings.Split(bom, "\n")
	bomEvilLine := 0
	for i := lineOf(t, bom, `"purl": "pkg:npm/scan-evil@1.0.1`) - 1; i >= 0; i-- {
		if strings.TrimSpace(bomLines[i]) == "{" {
			bomEvilLine = i + 1
			break
		}
	}

	in := newInstance(t, quiet+"  new_user_max_unverified: 0\nscan:\n  max_bytes: 256KiB\n")
	tok := in.user("ci@example.com")
	d := in.serve()
	evil := fwReport(t, in, d, tok, "npm", "scan-evil", "1.0.1")
	fwReport(t, in, d, tok, "npm", "scan-clean", "0.9.0") // another version: not a finding
	pyEvil := fwReport(t, in, d, tok, "pypi", "scan-evil-py", "")
	eventually(t, "the reports in the index", func() bool {
		return d.do("GET", base+"/check-malicious?purl=pkg:pypi/scan-evil-py", tok, "").body["malicious"] == true
	})
	site := regexp.MustCompile(`^https://[^/]+`).FindString(d.base)

	t.Run("local", func(t *testing.T) {
		r := in.cliIn(proj, "scan", "package-lock.json", "--format", "json")
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		var a scanAnswer
		if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		want := []string{fmt.Sprintf("package-lock.json:%d pkg:npm/scan-evil@1.0.1 %s", evilLine, evil)}
		if a.Packages != 3 || a.Count != 1 || !slices.Equal(a.summary(), want) || a.Malicious[0].Details["id"] != evil ||
			a.Malicious[0].Ecosystem != "npm" || !strings.HasSuffix(a.Malicious[0].URL, "/threats/"+evil) ||
			len(a.Files) != 1 || a.Files[0].Format != "package-lock.json" {
			t.Fatalf("answer %+v, want %v", a, want)
		}
		// Text: one line per finding with file:line, the id and the page.
		r = in.cliIn(proj, "scan", "package-lock.json")
		line := fmt.Sprintf("package-lock.json:%d: npm scan-evil@1.0.1 is malicious (threat %s): ", evilLine, evil)
		if r.code != 1 || !strings.Contains(r.stdout, line) || !strings.Contains(r.stdout, "3 packages checked in 1 file: 1 malicious") {
			t.Fatalf("text: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if r := in.cliIn(proj, "scan", "package-lock.json", "--fail-on", "none"); r.code != 0 || !strings.Contains(r.stdout, line) {
			t.Fatalf("--fail-on none: exit %d\n%s", r.code, r.stdout)
		}
		// The SBOM made from the same project finds the same package.
		r = in.cliIn(proj, "scan", "bom.cdx.json", "--format", "json")
		var b scanAnswer
		_ = json.Unmarshal([]byte(r.stdout), &b)
		if r.code != 1 || b.Count != 1 || !strings.HasPrefix(b.Malicious[0].Purl, "pkg:npm/scan-evil@1.0.1?download_url=") || *b.Malicious[0].Line != bomEvilLine ||
			b.Files[0].Format != "cyclonedx" {
			t.Fatalf("SBOM: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		// Several files: the findings of each; a clean file exits 0.
		os.WriteFile(filepath.Join(proj, "requirements.txt"), []byte("requests==2.31.0\nscan-evil-py>=1.0\n"), 0o644)
		r = in.cliIn(proj, "scan", "--format", "json", "package-lock.json", "requirements.txt")
		var c scanAnswer
		_ = json.Unmarshal([]byte(r.stdout), &c)
		want = append(want, "requirements.txt:2 pkg:pypi/scan-evil-py "+pyEvil)
		if r.code != 1 || c.Packages != 5 || !slices.Equal(c.summary(), want) {
			t.Fatalf("two files: exit %d %v, want %v\n%s", r.code, c.summary(), want, r.stderr)
		}
		os.WriteFile(filepath.Join(proj, "requirements-clean.txt"), []byte("requests==2.31.0\n"), 0o644)
		if r := in.cliIn(proj, "scan", "requirements-clean.txt"); r.code != 0 || !strings.Contains(r.stdout, "1 packages checked in 1 file: 0 malicious") {
			t.Fatalf("clean: exit %d %s %s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("exit 2", func(t *testing.T) {
		os.WriteFile(filepath.Join(proj, "notes.md"), []byte("# hello\n"), 0o644)
		os.WriteFile(filepath.Join(proj, "broken", "package-lock.json"), nil, 0o644)
		os.MkdirAll(filepath.Join(proj, "broken"), 0o755)
		os.WriteFile(filepath.Join(proj, "broken", "package-lock.json"), []byte("{\n  \"lockfileVersion\": 3,\n  \"packages\": {,}\n}\n"), 0o644)
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"scan", "notes.md"}, `the name "notes.md" nor the content`},
			{[]string{"scan", "missing.lock"}, "no such file"},
			{[]string{"scan", "broken/package-lock.json"}, "broken/package-lock.json is not a valid package-lock.json: line 3"},
			{[]string{"scan", "package-lock.json", "--format", "xml"}, "--format must be text, json or sarif"},
			{[]string{"scan", "package-lock.json", "--fail-on", "some"}, "--fail-on must be any or none"},
			{[]string{"scan", "package-lock.json", "--no-such-flag"}, "unknown flag"},
			{[]string{"scan"}, "name at least one lockfile, SBOM, workflow or directory"},
			{[]string{"scan", "package-lock.json", "--server", d.base + base, "--token", "thd_wrong"}, "certificate signed by unknown authority"},
			{[]string{"scan", "package-lock.json", "--server", "ftp://x"}, "--server must be"},
		} {
			r := in.cliIn(proj, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
				t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2 and %q", tc.args, r.code, r.stderr, r.stdout, tc.want)
			}
		}
	})

	t.Run("server", func(t *testing.T) {
		in.env = append(in.env, "SSL_CERT_FILE="+in.certFile())
		defer func() { in.env = in.env[:len(in.env)-1] }()
		local := in.cliIn(proj, "scan", "package-lock.json", "bom.cdx.json", "--format", "json")
		remote := in.cliIn(proj, "scan", "package-lock.json", "bom.cdx.json", "--format", "json", "--server", d.base+base, "--token", tok)
		var la, ra scanAnswer
		_ = json.Unmarshal([]byte(local.stdout), &la)
		_ = json.Unmarshal([]byte(remote.stdout), &ra)
		if r := in.cliIn(proj, "scan", "package-lock.json", "--server", d.base+base, "--token", "thd_wrong"); r.code != 2 ||
			!strings.Contains(r.stderr, "package-lock.json: the server answered 401 Unauthorized: Invalid API token") {
			t.Fatalf("a refused token: exit %d %s", r.code, r.stderr)
		}
		if remote.code != 1 || ra.Count != 2 || !slices.Equal(la.summary(), ra.summary()) || ra.Packages != la.Packages ||
			ra.Malicious[0].URL != site+"/threats/"+evil {
			t.Fatalf("through the daemon: exit %d %v, local %v\n%s", remote.code, ra.summary(), la.summary(), remote.stderr)
		}
		// THREATD_URL and THREATD_TOKEN, and SARIF.
		in.env = append(in.env, "THREATD_URL="+d.base+base, "THREATD_TOKEN="+tok)
		r := in.cliIn(proj, "scan", "package-lock.json", "--format", "sarif")
		in.env = in.env[:len(in.env)-2]
		if r.code != 1 {
			t.Fatalf("sarif: exit %d\n%s", r.code, r.stderr)
		}
		log := validSARIF(t, schema, []byte(r.stdout))
		run := log["runs"].([]any)[0].(map[string]any)
		res := run["results"].([]any)[0].(map[string]any)
		loc := res["locations"].([]any)[0].(map[string]any)["physicalLocation"].(map[string]any)
		rule := run["tool"].(map[string]any)["driver"].(map[string]any)["rules"].([]any)[0].(map[string]any)
		if res["ruleId"] != evil || loc["artifactLocation"].(map[string]any)["uri"] != "package-lock.json" ||
			loc["region"].(map[string]any)["startLine"] != float64(evilLine) || rule["helpUri"] != site+"/threats/"+evil ||
			res["partialFingerprints"] == nil || !strings.Contains(rule["fullDescription"].(map[string]any)["text"].(string), "Steals credentials") {
			t.Fatalf("SARIF result %v\nrule %v", res, rule)
		}
	})

	// The repository's GitHub Action runs its scan step as a runner would
	// (bash -eo pipefail, the step's environment, GITHUB_OUTPUT), with the
	// threatd go install would have put in $GOPATH/bin.
	t.Run("GitHub Action", func(t *testing.T) {
		var action struct {
			Runs struct {
				Steps []struct {
					ID  string            `yaml:"id"`
					Run string            `yaml:"run"`
					Env map[string]string `yaml:"env"`
				} `yaml:"steps"`
			} `yaml:"runs"`
		}
		raw, err := os.ReadFile("action.yml")
		if err != nil || yaml.Unmarshal(raw, &action) != nil {
			t.Fatalf("action.yml: %v", err)
		}
		inputs := map[string]string{"server": d.base + base, "token": tok, "files": "package-lock.json requirements-clean.txt", "version": "main"}
		gopath := t.TempDir()
		os.MkdirAll(filepath.Join(gopath, "bin"), 0o755)
		if err := os.Symlink(testbin.Path("threatd"), filepath.Join(gopath, "bin", "threatd")); err != nil {
			t.Fatal(err)
		}
		runner := t.TempDir()
		outputs := filepath.Join(runner, "output")
		ran := false
		for _, step := range action.Runs.Steps {
			if step.ID != "scan" {
				continue
			}
			ran = true
			env := []string{"GOPATH=" + gopath, "RUNNER_TEMP=" + runner, "GITHUB_OUTPUT=" + outputs, "SSL_CERT_FILE=" + in.certFile()}
			for k, v := range step.Env {
				v = regexp.MustCompile(`\$\{\{ inputs\.([a-z-]+) \}\}`).ReplaceAllStringFunc(v, func(m string) string {
					return inputs[regexp.MustCompile(`inputs\.([a-z-]+)`).FindStringSubmatch(m)[1]]
				})
				env = append(env, k+"="+v)
			}
			out, ok := client(t, proj, env, "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step.Run)
			if !ok || !strings.Contains(out, "is malicious (threat "+evil) {
				t.Fatalf("the scan step failed (it must leave failing to the last step):\n%s", out)
			}
		}
		got := readFile(t, outputs)
		sarif := filepath.Join(runner, "threatd.sarif")
		if !ran || !strings.Contains(got, "status=1\n") || !strings.Contains(got, "sarif="+sarif+"\n") {
			t.Fatalf("outputs %q", got)
		}
		log := validSARIF(t, schema, []byte(readFile(t, sarif)))
		if r := log["runs"].([]any)[0].(map[string]any)["results"].([]any); len(r) != 1 {
			t.Fatalf("the action's SARIF: %v", r)
		}
	})

	// The GitLab CI example's script, as a runner runs it (without the go
	// install line: threatd is on the PATH).
	t.Run("GitLab CI example", func(t *testing.T) {
		var jobs map[string]struct {
			Script []string `yaml:"script"`
		}
		raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "gitlab-ci.yml"))
		if err != nil || yaml.Unmarshal(raw, &jobs) != nil {
			t.Fatalf("gitlab-ci.yml: %v", err)
		}
		var script []string
		for _, l := range jobs["threatd-scan"].Script {
			if !strings.HasPrefix(l, "go install") {
				script = append(script, l)
			}
		}
		os.WriteFile(filepath.Join(proj, "go.sum"), []byte("golang.org/x/text v0.14.0 h1:ScX5w1eTa3QqT8oi6+ziP7dTV1S2+ALU0bI+0zXKWiQ=\n"), 0o644)
		env := []string{"PATH=" + filepath.Dir(testbin.Path("threatd")) + ":" + os.Getenv("PATH"), "SSL_CERT_FILE=" + in.certFile(),
			"THREATD_URL=" + d.base + base, "THREATD_TOKEN=" + tok}
		out, ok := client(t, proj, env, "bash", "-e", "-c", strings.Join(script, "\n"))
		if ok || len(script) < 3 || !strings.Contains(out, "is malicious") {
			t.Fatalf("the job must fail on the malicious package:\n%s", out)
		}
		var a scanAnswer
		if json.Unmarshal([]byte(readFile(t, filepath.Join(proj, "threatd-scan.json"))), &a) != nil || a.Count != 1 || len(a.Files) != 2 {
			t.Fatalf("threatd-scan.json: %+v", a)
		}
		validSARIF(t, schema, []byte(readFile(t, filepath.Join(proj, "threatd-scan.sarif"))))
	})

	t.Run("POST /scan", func(t *testing.T) {
		code, _, body := d.postScan("?file=app/package-lock.json", tok, []byte(lock))
		var a scanAnswer
		_ = json.Unmarshal(body, &a)
		if code != 200 || a.Count != 1 || a.Malicious[0].File != "app/package-lock.json" || *a.Malicious[0].Line != evilLine {
			t.Fatalf("JSON: %d %s", code, body)
		}
		// Named by its media type; SARIF when asked for.
		code, hdr, body := d.postScan("", tok, []byte(bom), "Content-Type", "application/vnd.cyclonedx+json", "Accept", "application/sarif+json")
		if code != 200 || hdr.Get("Content-Type") != "application/sarif+json" {
			t.Fatalf("SARIF: %d %v %s", code, hdr, body)
		}
		log := validSARIF(t, schema, body)
		res := log["runs"].([]any)[0].(map[string]any)["results"].([]any)
		if len(res) != 1 || res[0].(map[string]any)["ruleId"] != evil {
			t.Fatalf("SARIF results: %v", res)
		}
		// Recognised by content alone.
		if code, _, body := d.postScan("", tok, []byte(lock), "Content-Type", "application/json"); code != 200 || !strings.Contains(string(body), `"count":1`) {
			t.Fatalf("by content: %d %s", code, body)
		}
		for _, tc := range []struct {
			query  string
			body   string
			status int
			want   string
		}{
			{"", "hello world\n", 400, "format: the format is not recognised from the content"},
			{"?format=maven", lock, 400, `format "maven" is not one scan reads`},
			{"?format=yarn.lock", "{\n  \"lockfileVersion\": 3,\n  \"packages\": {,}\n}\n", 400, "is not a valid yarn.lock"},
			{"?file=package-lock.json", "{\n  \"lockfileVersion\": 3,\n  \"packages\": {,}\n}\n", 400, "package-lock.json is not a valid package-lock.json: line 3"},
			{"", "", 400, "The request body is empty"},
			{"?file=package-lock.json", strings.Repeat(" ", 256<<10+1), 413, "The file is larger than 256 KiB"},
			{"?fmt=npm", lock, 400, "fmt: is not a known parameter"},
		} {
			code, _, body := d.postScan(tc.query, tok, []byte(tc.body))
			var e map[string]any
			_ = json.Unmarshal(body, &e)
			if msg, _ := e["error"].(string); code != tc.status || !strings.Contains(msg, tc.want) {
				t.Errorf("%s %.30q: %d %s, want %d %q", tc.query, tc.body, code, body, tc.status, tc.want)
			}
		}
		if code, _, body := d.postScan("", "", []byte(lock)); code != 401 {
			t.Errorf("anonymous: %d %s", code, body)
		}
	})

	// osv-scanner, reading threatd's OSV export, finds the same packages in
	// the same lockfile.
	t.Run("osv-scanner agrees", func(t *testing.T) {
		root := t.TempDir()
		in.mustCLI("export", "osv", filepath.Join(root, "osv-scanner"))
		py := filepath.Join(proj, "py", "requirements.txt")
		os.MkdirAll(filepath.Dir(py), 0o755)
		os.WriteFile(py, []byte("requests==2.31.0\nscan-evil-py==1.0.1\n"), 0o644)
		var theirs []string
		for pkg, ids := range osvScannerFindings(t, scanner, root, filepath.Join(proj, "package-lock.json"), py) {
			for _, id := range ids {
				theirs = append(theirs, pkg+" "+strings.TrimPrefix(id, "THREATD-"))
			}
		}
		r := in.cliIn(proj, "scan", "--format", "json", "package-lock.json", "py/requirements.txt")
		var a scanAnswer
		_ = json.Unmarshal([]byte(r.stdout), &a)
		var ours []string
		for _, m := range a.Malicious {
			for _, id := range m.ThreatIDs {
				ours = append(ours, m.Name+"@"+m.Version+" "+id)
			}
		}
		slices.Sort(theirs)
		slices.Sort(ours)
		if len(ours) != 2 || !slices.Equal(ours, theirs) {
			t.Fatalf("threatd scan found %v, osv-scanner %v", ours, theirs)
		}
	})
}

// POST /scan counts like a batch check: each 100 packages one request.
func TestScanCountsPackages(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "limits:\n  per_ip_per_minute: 0\n  per_token_per_minute: {free: 5, paid: 0}\n")
	tok := in.user("ci@example.com")
	d := in.serve()
	apitest.ClearOfWindowEdge(t, time.Minute, 10*time.Second)
	var sum strings.Builder
	for i := range 450 {
		fmt.Fprintf(&sum, "example.com/m%d v1.0.0 h1:AAAA=\n", i)
	}
	code, hdr, body := d.postScan("?file=go.sum", tok, []byte(sum.String()))
	if code != 200 || hdr.Get("RateLimit-Remaining") != "0" || !strings.Contains(string(body), `"packages":450`) {
		t.Fatalf("450 packages: %d %v %s", code, hdr, body)
	}
	code, _, body = d.postScan("?file=go.sum", tok, []byte("example.com/m v1.0.0 h1:AAAA=\n"))
	if code != 429 || !strings.Contains(string(body), "Rate limit exceeded") {
		t.Fatalf("over the budget: %d %s", code, body)
	}
}

// TestScanFIFOInterrupted: `threatd scan` reading a FIFO nobody writes to
// ends on SIGTERM (and SIGINT) with exit status 2 and says why, instead of
// waiting for ever.
func TestScanFIFOInterrupted(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		fifo := filepath.Join(t.TempDir(), "package-lock.json")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		cmd := exec.Command(testbin.Path("threatd"), "scan", "--config", in.config, fifo)
		cmd.Env = in.environ()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Signalled once it reads the FIFO (under load a fixed pause could
		// come before it has even started): a writer can open a FIFO
		// without blocking only when a reader has it open.
		var w *os.File
		for deadline := time.Now().Add(20 * time.Second); w == nil; time.Sleep(20 * time.Millisecond) {
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w = f
			} else if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("threatd scan did not open the FIFO within 20 s: %v", err)
			}
		}
		time.Sleep(100 * time.Millisecond) // into its read
		_ = cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "interrupted") {
				t.Fatalf("%s: %v, stderr %q; want exit status 2 saying it was interrupted", sig, err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("threatd scan on a FIFO ignored %s", sig)
		}
		w.Close()
	}
}
