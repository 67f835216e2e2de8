package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// workflowCI is a workflow with a malicious action, a reusable workflow of
// a malicious repository, a malicious image, a local action and clean
// actions; the lines of the uses: a scan must point at are commented.
const workflowCI = `name: ci
on: [push]
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: tj-actions/changed-files@v35.7.7   # line 8: the action's report
      - uses: ./.github/actions/setup
      - uses: docker://evil/image:latest         # line 10: the image's report
  release:
    uses: evil-org/evil-action/.github/workflows/release.yml@v1   # line 12: the repository's report
`

// TestScanWorkflows: threatd scan DIR finds a repository's workflows and
// composite actions (not those under node_modules), checks each uses: as
// an action of github-actions at its ref, as its repository and as an
// image, and points SARIF at the uses: line; the same through a daemon
// and POST /scan?format=github-actions; a directory without workflows is
// an error.
func TestScanWorkflows(t *testing.T) {
	t.Parallel()
	schema := sarifSchema(t, scanTools(t))
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	tok := in.user("ci@example.com")
	d := in.serve()
	action := d.submit(tok, `{"report_type":"package","resource_identifier":"tj-actions/changed-files","registry":"github-actions","threat_description":"Dumps the runner's secrets to the log","version_info":"v35.7.7"}`)
	repo := d.submit(tok, `{"report_type":"repository","resource_identifier":"github.com/evil-org/evil-action","threat_description":"A workflow that steals secrets"}`)
	image := d.submit(tok, `{"report_type":"container","resource_identifier":"evil/image:latest","threat_description":"Cryptominer"}`)
	in.mustCLI("review", "verify", action, repo, image)

	dir := t.TempDir()
	for name, body := range map[string]string{
		".github/workflows/ci.yml":         workflowCI,
		".github/workflows/lint.yaml":      "on: push\njobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/setup-go@v5\n",
		".github/actions/setup/action.yml": "name: setup\nruns:\n  using: composite\n  steps:\n    - uses: tj-actions/changed-files@v35.7.7\n",
		"node_modules/dep/action.yml":      "runs:\n  using: composite\n  steps:\n    - uses: tj-actions/changed-files@v35.7.7\n",
		".github/workflows/notes.md":       "uses: tj-actions/changed-files@v35.7.7\n",
		"package.json":                     "{}",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type finding struct {
		File, Name, Version string
		Line                int
		ThreatIDs           []string `json:"threat_ids"`
	}
	summary := func(out string) []string {
		var a struct {
			Count     int
			Malicious []finding
			Files     []struct{ File, Format string }
		}
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var got []string
		for _, m := range a.Malicious {
			got = append(got, m.File+":"+strconv.Itoa(m.Line)+" "+m.Name+"@"+m.Version+" "+strings.Join(m.ThreatIDs, ","))
		}
		for _, f := range a.Files {
			got = append(got, "file "+f.File+" "+f.Format)
		}
		slices.Sort(got)
		return got
	}
	want := []string{
		".github/actions/setup/action.yml:5 tj-actions/changed-files@v35.7.7 " + action,
		".github/workflows/ci.yml:10 evil/image:latest@ " + image,
		".github/workflows/ci.yml:12 github.com/evil-org/evil-action@ " + repo,
		".github/workflows/ci.yml:8 tj-actions/changed-files@v35.7.7 " + action,
		"file .github/actions/setup/action.yml github-actions",
		"file .github/workflows/ci.yml github-actions",
		"file .github/workflows/lint.yaml github-actions",
	}
	slices.Sort(want)
	local := in.cliIn(dir, "scan", ".", "--format", "json")
	if local.code != 1 || !slices.Equal(summary(local.stdout), want) {
		t.Fatalf("threatd scan . (storage): exit %d\n%s\nwant %s\n%s", local.code, strings.Join(summary(local.stdout), "\n"), strings.Join(want, "\n"), local.stderr)
	}
	eventually(t, "the daemon's index has the verifications", func() bool {
		return d.do("GET", base+"/check-malicious?report_type=repository&resource_identifier=github.com/evil-org/evil-action", tok, "").body["malicious"] == true
	})
	in.env = append(in.env, "SSL_CERT_FILE="+in.certFile())
	remote := in.cliIn(dir, "scan", ".", "--format", "json", "--server", d.base+base, "--token", tok)
	if remote.code != 1 || !slices.Equal(summary(remote.stdout), want) {
		t.Fatalf("threatd scan . --server: exit %d\n%s\n%s", remote.code, remote.stdout, remote.stderr)
	}
	// SARIF: each result at its uses: line of its file.
	r := in.cliIn(dir, "scan", ".github/workflows/ci.yml", "--format", "sarif", "--server", d.base+base, "--token", tok)
	log := validSARIF(t, schema, []byte(r.stdout))
	var lines []string
	for _, x := range log["runs"].([]any)[0].(map[string]any)["results"].([]any) {
		res := x.(map[string]any)
		loc := res["locations"].([]any)[0].(map[string]any)["physicalLocation"].(map[string]any)
		lines = append(lines, loc["artifactLocation"].(map[string]any)["uri"].(string)+":"+strconv.Itoa(int(loc["region"].(map[string]any)["startLine"].(float64)))+" "+res["ruleId"].(string))
	}
	slices.Sort(lines)
	wantLines := []string{".github/workflows/ci.yml:10 " + image, ".github/workflows/ci.yml:12 " + repo, ".github/workflows/ci.yml:8 " + action}
	slices.Sort(wantLines)
	if r.code != 1 || !slices.Equal(lines, wantLines) {
		t.Fatalf("SARIF: exit %d %v, want %v\n%s", r.code, lines, wantLines, r.stderr)
	}
	// POST /scan names the format; a workflow's name gives it too.
	code, _, body := d.postScan("?format=github-actions", tok, []byte(workflowCI))
	var a struct{ Count int }
	if code != 200 || json.Unmarshal(body, &a) != nil || a.Count != 3 {
		t.Fatalf("POST /scan?format=github-actions: %d %s", code, body)
	}
	code, _, body = d.postScan("?file=.github/workflows/ci.yml", tok, []byte(workflowCI))
	if code != 200 || json.Unmarshal(body, &a) != nil || a.Count != 3 {
		t.Fatalf("POST /scan?file=.github/workflows/ci.yml: %d %s", code, body)
	}
	// A directory without workflows.
	empty := t.TempDir()
	if r := in.cliIn(empty, "scan", "."); r.code != 2 || !strings.Contains(r.stderr, "no GitHub Actions files in it") {
		t.Fatalf("an empty directory: exit %d %s", r.code, r.stderr)
	}
}
