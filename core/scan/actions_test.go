package scan

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// TestWorkflowUses: every uses: of a workflow is read at its line — a
// step's action (with a path below its repository), a reusable workflow,
// a docker:// image — and a local action, an expression and a reference
// without a ref are skipped, each saying why.
func TestWorkflowUses(t *testing.T) {
	f := parseFixture(t, "workflow.yml")
	if f.Format != GitHubActions {
		t.Fatalf("format %s", f.Format)
	}
	var got []string
	for _, p := range f.Packages {
		got = append(got, string(p.Type)+" "+p.Registry+" "+p.Name+"@"+p.Version+":"+itoa(p.Line)+" "+p.PackageURL())
	}
	want := []string{
		" github-actions actions/checkout@v4:7 pkg:githubactions/actions/checkout@v4",
		"repository  github.com/actions/checkout@:7 pkg:github/actions/checkout",
		" github-actions tj-actions/changed-files@v35.7.7:8 pkg:githubactions/tj-actions/changed-files@v35.7.7",
		"repository  github.com/tj-actions/changed-files@:8 pkg:github/tj-actions/changed-files",
		" github-actions evil-org/evil-action@main:10 pkg:githubactions/evil-org/evil-action@main",
		"repository  github.com/evil-org/evil-action@:10 pkg:github/evil-org/evil-action",
		"container  evil/image:latest@:12 pkg:docker/evil/image@latest",
		" github-actions Evil-Org/Evil-Action@v1:16 pkg:githubactions/Evil-Org/Evil-Action@v1",
		"repository  github.com/Evil-Org/Evil-Action@:16 pkg:github/evil-org/evil-action",
		" github-actions actions/setup-go@0aaccfd150d50ccaeb58ebd88d36e91967a5f35b:20 pkg:githubactions/actions/setup-go@0aaccfd150d50ccaeb58ebd88d36e91967a5f35b",
		"repository  github.com/actions/setup-go@:20 pkg:github/actions/setup-go",
	}
	if !slices.Equal(got, want) {
		t.Errorf("packages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var skipped []string
	for _, s := range f.Skipped {
		skipped = append(skipped, s.Name+":"+itoa(s.Line)+" "+s.Reason)
	}
	wantSkipped := []string{
		"./.github/actions/local:11 a local action, part of this repository",
		"${{ matrix.action }}:13 an expression, known only when the workflow runs",
		"no-ref/action:21 not owner/repo[/path]@ref",
	}
	if !slices.Equal(skipped, wantSkipped) {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(skipped, "\n"), strings.Join(wantSkipped, "\n"))
	}
}

// TestWorkflowFindings: a report of an action (in any case, at a ref), of
// its repository and of an image each find the uses: that names them, at
// its line; a report of another ref does not.
func TestWorkflowFindings(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := keyMatcher{}
	add := func(id string, typ core.ReportType, registry, name, versions string) {
		key, err := core.CanonicalKey(typ, registry, name)
		if err != nil {
			t.Fatal(err)
		}
		m[key] = append(m[key], core.Threat{ID: id, CanonicalKey: key, ReportType: typ, Registry: registry, ResourceIdentifier: name,
			AllVersions: versions == "", VerifiedAt: &at, Details: core.Details{VersionInfo: versions}})
	}
	add("11111111-1111-4111-8111-111111111111", core.TypePackage, core.RegistryGitHubActions, "TJ-Actions/changed-files", "v35.7.7")
	add("22222222-2222-4222-8222-222222222222", core.TypeRepository, "", "github.com/evil-org/evil-action", "")
	add("33333333-3333-4333-8333-333333333333", core.TypeContainer, "", "evil/image:latest", "")
	add("44444444-4444-4444-8444-444444444444", core.TypePackage, core.RegistryGitHubActions, "actions/checkout", "v3")
	res, err := Check(context.Background(), m, []File{parseFixture(t, "workflow.yml")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range res.Findings {
		got = append(got, f.Threats[0].ID[:1]+" "+f.Name+":"+itoa(f.Line))
	}
	// The reusable workflow's repository is written in other case: a
	// repository's path is compared as written.
	want := []string{"1 tj-actions/changed-files:8", "2 github.com/evil-org/evil-action:10", "3 evil/image:latest:12"}
	if !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	if res.Packages != 11 {
		t.Errorf("%d checked, want 11", res.Packages)
	}
}

// TestWorkflowErrors: what is not a workflow says why.
func TestWorkflowErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"name: x\non: push\n", "neither jobs"},
		{"jobs: [1]\n", "line 1: jobs is not a mapping"},
		{"jobs:\n  a:\n    steps: 3\n", "line 3: steps is not a list"},
		{"jobs: {a: [1\n", "yaml"},
	} {
		_, err := Parse(".github/workflows/ci.yml", []byte(c.body), GitHubActions)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "is not a valid github-actions") {
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
	for name, want := range map[string]bool{".github/workflows/ci.yml": true, "repo/.github/workflows/release.yaml": true, "action.yml": true,
		"sub/action.yaml": true, ".github/ci.yml": false, "workflows/ci.yml": false, ".github/workflows/README.md": false} {
		if IsWorkflowPath(name) != want {
			t.Errorf("IsWorkflowPath(%q) = %v", name, !want)
		}
	}
}
