package main_test

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// mergeYAML merges YAML documents, later keys over earlier ones, maps
// merged key by key: the configuration an operator writes by adding the
// doc's blocks to one file.
func mergeYAML(t *testing.T, docs ...string) string {
	t.Helper()
	var merge func(dst, src map[string]any)
	merge = func(dst, src map[string]any) {
		for k, v := range src {
			if sm, ok := v.(map[string]any); ok {
				if dm, ok := dst[k].(map[string]any); ok {
					merge(dm, sm)
					continue
				}
			}
			dst[k] = v
		}
	}
	all := map[string]any{}
	for _, d := range docs {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("%v:\n%s", err, d)
		}
		merge(all, m)
	}
	b, err := yaml.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// debianMavenRepo serves Debian's Maven repository (/usr/share/maven-repo:
// the dependency plugin and what it needs, from the Debian packages
// libmaven-dependency-plugin-java and junit4) below prefix, as Maven
// Central serves its files: with checksum files, a Last-Modified of long
// ago, and the maven-metadata.xml Maven reads to find a plugin by its
// prefix (dependency:resolve) and its version, which Debian does not ship.
func debianMavenRepo(prefix string) func(p string) (fakeregistry.File, bool) {
	const root = "/usr/share/maven-repo"
	old := map[string]string{"Last-Modified": "Mon, 02 Jan 2023 00:00:00 GMT"}
	return func(p string) (fakeregistry.File, bool) {
		rel, ok := strings.CutPrefix(p, prefix)
		if !ok || strings.Contains(rel, "..") {
			return fakeregistry.File{}, false
		}
		var sum func([]byte) string
		switch {
		case strings.HasSuffix(rel, ".sha1"):
			rel, sum = strings.TrimSuffix(rel, ".sha1"), func(b []byte) string { s := sha1.Sum(b); return hex.EncodeToString(s[:]) }
		case strings.HasSuffix(rel, ".md5"):
			rel, sum = strings.TrimSuffix(rel, ".md5"), func(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }
		}
		var body []byte
		if strings.HasSuffix(rel, "/maven-metadata.xml") {
			body = mavenRepoMetadata(filepath.Join(root, strings.TrimSuffix(rel, "/maven-metadata.xml")))
		} else if b, err := os.ReadFile(filepath.Join(root, rel)); err == nil {
			body = b
		}
		if body == nil {
			return fakeregistry.File{}, false
		}
		if sum != nil {
			return fakeregistry.File{Body: []byte(sum(body)), ContentType: "text/plain", MaxAge: 60, Header: old}, true
		}
		return fakeregistry.File{Body: body, ContentType: "application/octet-stream", MaxAge: 60, Header: old}, true
	}
}

// mavenRepoMetadata is the metadata of a directory of Debian's Maven
// repository: a plugin group's (its plugins' prefixes) or an artifact's
// (the versions with a jar), as Maven Central writes them; nil otherwise.
func mavenRepoMetadata(dir string) []byte {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var plugins, versions []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "maven-") && strings.HasSuffix(name, "-plugin") {
			plugins = append(plugins, fmt.Sprintf("<plugin><name>%s</name><prefix>%s</prefix><artifactId>%s</artifactId></plugin>",
				name, strings.TrimSuffix(strings.TrimPrefix(name, "maven-"), "-plugin"), name))
		}
		jars, _ := filepath.Glob(filepath.Join(dir, name, "*.jar"))
		if len(jars) > 0 && name != "debian" {
			versions = append(versions, name)
		}
	}
	switch {
	case len(plugins) > 0:
		return []byte("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata><plugins>" + strings.Join(plugins, "") + "</plugins></metadata>\n")
	case len(versions) > 0:
		sort.Strings(versions)
		last := versions[len(versions)-1]
		return []byte(fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata><groupId>%s</groupId><artifactId>%s</artifactId><versioning><latest>%s</latest><release>%s</release><versions><version>%s</version></versions><lastUpdated>20230102000000</lastUpdated></versioning></metadata>\n",
			"", filepath.Base(dir), last, last, strings.Join(versions, "</version><version>")))
	}
	return nil
}

// rubySpecs publishes the legacy full index gem reads (specs.4.8.gz and
// its latest and prerelease lists) for the gems given, as name → versions.
func rubySpecs(u *fakeregistry.Registry, t *testing.T, gems map[string][]string) {
	t.Helper()
	dir := t.TempDir()
	var list []string
	for name, versions := range gems {
		for _, v := range versions {
			list = append(list, name+" "+v)
		}
	}
	script := `require "rubygems"; require "zlib"
all = ARGV.map { |s| n, v = s.split(" "); [n, Gem::Version.new(v), "ruby"] }
latest = all.group_by(&:first).map { |_, l| l.max_by { |e| e[1] } }
File.binwrite("specs.4.8.gz", Zlib.gzip(Marshal.dump(all)))
File.binwrite("latest_specs.4.8.gz", Zlib.gzip(Marshal.dump(latest)))
File.binwrite("prerelease_specs.4.8.gz", Zlib.gzip(Marshal.dump([])))`
	cmd := exec.Command("ruby", append([]string{"-e", script}, list...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ruby: %v\n%s", err, out)
	}
	for _, f := range []string{"specs.4.8.gz", "latest_specs.4.8.gz", "prerelease_specs.4.8.gz"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		u.Put("/rubygems/"+f, "application/octet-stream", 60, b)
	}
}

// shellEnv runs a snippet in bash as a person pastes it into a shell, and
// returns the environment that shell has after it (what it exported), so
// that the commands the person types next run with it.
func (s *docSite) shellEnv(t *testing.T, dir string, env []string, snippet string) []string {
	t.Helper()
	out, ok := s.bash(t, dir, env, snippet+"\nprintf '\\0=ENV=\\0'\nenv -0\n")
	if !ok {
		t.Fatalf("the snippet fails as pasted:\n%s\n%s", snippet, out)
	}
	_, dump, found := strings.Cut(out, "\x00=ENV=\x00")
	if !found {
		t.Fatalf("no environment after the snippet:\n%s", out)
	}
	var after []string
	for _, kv := range strings.Split(dump, "\x00") {
		if kv != "" && !strings.HasPrefix(kv, "_=") && !strings.HasPrefix(kv, "SHLVL=") && !strings.HasPrefix(kv, "PWD=") && !strings.HasPrefix(kv, "OLDPWD=") {
			after = append(after, kv)
		}
	}
	return after
}

// write writes files (path relative to dir → content).
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pythonVenv is a virtual environment in home whose pip the snippets
// configure (a pip that installs into the machine's own Python would
// change the machine), and the environment with it first on PATH.
func pythonVenv(t *testing.T, home string, env []string) []string {
	t.Helper()
	python := needTool(t, "python3")
	venv := filepath.Join(home, "venv")
	if out, err := exec.Command(python, "-m", "venv", venv).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 -m venv (Debian: apt-get install python3-venv): %v\n%s", err, out)
		}
		t.Skipf("python3 -m venv fails (Debian: apt-get install python3-venv): %v", err)
	}
	out := append([]string(nil), env...)
	for i, kv := range out {
		if strings.HasPrefix(kv, "PATH=") {
			out[i] = "PATH=" + filepath.Join(venv, "bin") + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	return append(out, "VIRTUAL_ENV="+venv)
}

// cargoLock is a Cargo.lock (v4) of the app that pins evil at version.
func cargoLock(version, sum string) string {
	return fmt.Sprintf("version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n \"evil\",\n]\n\n[[package]]\nname = \"evil\"\nversion = %q\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = %q\n", version, sum)
}

// httpClient is a Go client that reaches threatd.example as the snippets'
// clients do, trusting the copied certificate.
func (s *docSite) httpClient(t *testing.T) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(filepath.Join(s.etc, "cert.pem"))
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("the copied certificate: %v", err)
	}
	proxy, _ := url.Parse(s.proxy)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: pool}}}
}
