package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// ciJobs runs docs/firewall.md's CI jobs as their runners run them, in a
// checkout of a project that depends on the clean versions: GitHub
// Actions' env, then each run step with bash -eo pipefail, the secrets'
// expressions replaced by their values; GitLab's variables, then each
// script line. Every job must succeed.
func (s *docSite) ciJobs(t *testing.T, u *fakeregistry.Registry, snip func(string) string) {
	cert := readFile(t, filepath.Join(s.etc, "cert.pem"))
	certFile := filepath.Join(t.TempDir(), "THREATD_CERT")
	if err := os.WriteFile(certFile, []byte(cert), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"THREATD_TOKEN": s.tok, "THREATD_CERT": cert}
	expr := regexp.MustCompile(`\$\{\{\s*secrets\.([A-Z_]+)\s*\}\}`)
	expand := func(v string) string {
		return expr.ReplaceAllStringFunc(v, func(m string) string { return secrets[expr.FindStringSubmatch(m)[1]] })
	}
	checkout := func(t *testing.T) string {
		dir := t.TempDir()
		pinLockfile(t, dir, "evil", "1.0.0", "https://registry.npmjs.org/evil/-/evil-1.0.0.tgz", u.Files["/evil/-/evil-1.0.0.tgz"].Body)
		writeFiles(t, dir, map[string]string{
			"requirements.txt": "evil==1.0.0\n",
			"go.mod":           "module example.com/consumer\n\ngo 1.21\n\nrequire example.com/evil v1.0.0\n",
			"pom.xml": `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example.app</groupId><artifactId>app</artifactId><version>1</version>
  <dependencies><dependency><groupId>com.example</groupId><artifactId>evil</artifactId><version>1.0.0</version></dependency></dependencies>
</project>
`,
			"Cargo.toml":  "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nevil = \"1\"\n",
			"Cargo.lock":  cargoLock("1.0.0", u.CrateSum("evil", "1.0.0")),
			"src/main.rs": "fn main() {}\n",
			"Gemfile":     "source \"https://threatd.example:8443/functions/v1/firewall/rubygems/\"\ngem \"evil\"\n",
		})
		return dir
	}
	github := func(t *testing.T, name string, tools ...string) {
		for _, tool := range tools {
			needTool(t, tool)
		}
		var job struct {
			Env   map[string]string
			Steps []struct{ Uses, Run string }
		}
		if err := yaml.Unmarshal([]byte(snip(name)), &job); err != nil {
			t.Fatal(err)
		}
		home, dir := t.TempDir(), checkout(t)
		env := append(s.env(home), "RUNNER_TEMP="+t.TempDir(), "CI=true", "GITHUB_ACTIONS=true")
		for k, v := range job.Env {
			env = append(env, k+"="+expand(v))
		}
		for _, step := range job.Steps {
			if step.Run == "" {
				continue // actions/checkout: the project is there
			}
			if out, ok := s.bash(t, dir, env, expand(step.Run)); !ok {
				t.Fatalf("%s: the step fails:\n%s\n%s", name, step.Run, out)
			}
		}
	}
	t.Run("github npm", func(t *testing.T) {
		t.Parallel()
		github(t, "fw-ci-github-npm", "npm")
	})
	t.Run("github others", func(t *testing.T) {
		t.Parallel()
		if _, err := os.Stat("/usr/share/maven-repo/org/apache/maven/plugins/maven-dependency-plugin"); err != nil && os.Getenv("CI") != "true" {
			t.Skip("Debian's libmaven-dependency-plugin-java is not installed")
		}
		github(t, "fw-ci-github-others", "mvn", "keytool", "cargo", "bundle", "skopeo", "docker-registry")
	})
	t.Run("gitlab", func(t *testing.T) {
		t.Parallel()
		needTool(t, "go")
		var job struct {
			Variables map[string]string
			Script    []string
		}
		if err := yaml.Unmarshal([]byte(snip("fw-ci-gitlab")), &job); err != nil {
			t.Fatal(err)
		}
		home, dir := t.TempDir(), checkout(t)
		env := append(pythonVenv(t, home, s.env(home)), "THREATD_CERT="+certFile, "CI=true", "GITLAB_CI=true")
		var script strings.Builder
		keys := make([]string, 0, len(job.Variables))
		for k := range job.Variables {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			script.WriteString("export " + k + "=\"" + job.Variables[k] + "\"\n")
		}
		for _, line := range job.Script {
			script.WriteString(line + "\n")
		}
		if out, ok := s.bash(t, dir, env, script.String()); !ok {
			t.Fatalf("the GitLab job fails:\n%s\n%s", script.String(), out)
		}
	})
}
