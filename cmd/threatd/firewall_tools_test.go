package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// npmEnv is the environment of an npm that installs through d's firewall
// with tok: a user .npmrc with the registry, the token and the daemon's
// certificate, and a cache of its own.
func npmEnv(t *testing.T, in *instance, d *daemon, tok string) []string {
	t.Helper()
	home := t.TempDir()
	registry := d.base + base + "/firewall/npm/"
	npmrc := fmt.Sprintf("registry=%s\n%s:_authToken=%s\ncafile=%s\nfund=false\nupdate-notifier=false\ncache=%s\n",
		registry, strings.TrimPrefix(registry, "https:"), tok, in.certFile(), filepath.Join(home, "cache"))
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(npmrc), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"HOME=" + home, "NPM_CONFIG_USERCONFIG=" + filepath.Join(home, ".npmrc"), "npm_config_audit=false"}
}

// pipEnv is the environment of a pip that reads only its command line:
// requests lets REQUESTS_CA_BUNDLE override --cert, and the machine's
// pip settings would add indexes.
var pipEnv = []string{"PIP_CONFIG_FILE=/dev/null", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_CACHE_DIR=1", "PIP_NO_INPUT=1",
	"PIP_CERT=", "PIP_FIND_LINKS=", "PIP_INDEX_URL=", "PIP_EXTRA_INDEX_URL=", "REQUESTS_CA_BUNDLE=", "CURL_CA_BUNDLE="}

// pipInstaller returns a pip install through d's firewall with tok into a
// new target directory: its output, whether it succeeded, the target.
func pipInstaller(t *testing.T, in *instance, d *daemon, tok string) func(args ...string) (string, bool, string) {
	python := needTool(t, "python3")
	index := "https://__token__:" + tok + "@" + strings.TrimPrefix(d.base, "https://") + base + "/firewall/pypi/simple/"
	return func(args ...string) (string, bool, string) {
		target := t.TempDir()
		out, ok := client(t, target, pipEnv, python, append([]string{"-m", "pip", "install", "--target", target, "--index-url", index, "--cert", in.certFile()}, args...)...)
		return out, ok, target
	}
}

// goEnv is the environment of a go command that fetches modules through
// proxy with the token from a .netrc in home, trusting the instance's
// certificate.
func goEnv(t *testing.T, in *instance, d *daemon, tok, home, proxy string) []string {
	t.Helper()
	host := strings.TrimPrefix(d.base, "https://")
	if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine "+host+" login threatd password "+tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"HOME=" + home, "NETRC=" + filepath.Join(home, ".netrc"), "GOPROXY=" + proxy, "GOSUMDB=off",
		"GOFLAGS=-modcacherw", "GOMODCACHE=" + filepath.Join(home, "mod"), "GOPATH=" + filepath.Join(home, "gopath"),
		"GOTOOLCHAIN=local", "GOPRIVATE=", "GONOPROXY=", "GOAUTH=netrc", "SSL_CERT_FILE=" + in.certFile(), "GO111MODULE=on"}
}

// goModDir is a new module directory for a go command to run in.
func goModDir(t *testing.T) string {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/consumer\n\ngo 1.21\n"), 0o644)
	return dir
}

// pinLockfile writes into dir a package.json depending on name@version and
// a package-lock.json (v3) that pins it to the tarball tgz at resolved.
func pinLockfile(t *testing.T, dir, name, version, resolved string, tgz []byte) {
	t.Helper()
	deps := map[string]string{name: version}
	pj, _ := json.Marshal(map[string]any{"name": "consumer", "version": "1.0.0", "private": true, "dependencies": deps})
	lock, _ := json.MarshalIndent(map[string]any{"name": "consumer", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
		"packages": map[string]any{
			"":                     map[string]any{"name": "consumer", "version": "1.0.0", "dependencies": deps},
			"node_modules/" + name: map[string]any{"version": version, "resolved": resolved, "integrity": fakeregistry.Integrity(tgz)},
		}}, "", "  ")
	if os.WriteFile(filepath.Join(dir, "package.json"), pj, 0o644) != nil || os.WriteFile(filepath.Join(dir, "package-lock.json"), lock, 0o644) != nil {
		t.Fatal("cannot write the project")
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, _ := os.ReadFile(p)
	return string(b)
}
