package main_test

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// TestFirewallDocSnippets: every setup snippet of docs/firewall.md, pasted
// as it is, works with its real client against a daemon reached as
// threatd.example (see docSite): the certificate names it, each client
// installs a clean version through the firewall with the token and the
// certificate the snippets give it, and prints for a blocked version what
// the page's transcripts show. The CI jobs run as their runners run them.
func TestFirewallDocSnippets(t *testing.T) {
	t.Parallel()
	const doc = "docs/firewall.md"
	snip := func(name string) string { return docSnippet(t, doc, "snippet", name) }
	u := fakeregistry.New(t)
	old := fakeregistry.OldTimes(2)
	u.NPMPackage(t, "evil", "1.0.1", "1.0.0", "1.0.1")
	u.PyPIProject(t, "evil", "1.0.0", "1.0.1")
	u.GoModule(t, "example.com/evil", "v1.0.0", "v1.0.1")
	u.MavenArtifact(t, "com.example", "evil", []string{"1.0.0", "1.0.1"}, old)
	u.Fallback = debianMavenRepo("/maven2/")
	u.CargoCrate(t, "evil", []string{"1.0.0", "1.0.1"}, old)
	if _, err := exec.LookPath("gem"); err == nil {
		rubyGem(u, t, "evil", []string{"1.0.0", "1.0.1"}, old)
		rubySpecs(u, t, map[string][]string{"evil": {"1.0.0", "1.0.1"}})
	}
	u.NuGetServiceIndex(fakeregistry.NuGetOrg)
	u.NuGetPackage(t, fakeregistry.NuGetOrg, "Evil", []string{"1.0.0", "1.0.1"}, old)

	// Images: Debian's docker-registry behind Docker Hub's token challenge.
	imageUpstream := u.Srv.URL
	images := false
	if _, err := exec.LookPath("skopeo"); err == nil {
		if _, err := exec.LookPath("docker-registry"); err == nil {
			registry := dockerRegistry(t)
			layout := t.TempDir()
			ociLayout(t, layout, "1.25", "22", "evil")
			for ref, tag := range map[string]string{"library/nginx:1.25": "1.25", "library/node:22": "22", "library/app:evil": "evil"} {
				if out, ok := skopeo(t, nil, "copy", "--dest-tls-verify=false", "oci:"+layout+":"+tag, "docker://"+registry+"/"+ref); !ok {
					t.Fatalf("loading the upstream: %s", out)
				}
			}
			gate, _ := tokenGate(t, registry)
			imageUpstream, images = gate.URL, true
		}
	}

	ip := freeLoopback(t, 8443, 5443)
	oci := strings.NewReplacer(`"0.0.0.0:5443"`, `"`+ip+`:5443"`, `"https://registry-1.docker.io"`, `"`+imageUpstream+`"`,
		`["https://auth.docker.io", "https://production.cloudflare.docker.com"]`, `[]`).Replace(snip("fw-oci-config"))
	upstreams := fmt.Sprintf("firewall:\n  npm: {upstream: %q}\n  pypi: {upstream: %q}\n  go: {upstream: %q}\n  maven: {upstream: %q}\n  cargo: {upstream: %q}\n  rubygems: {upstream: %q}\n  nuget: {upstream: %q}\n",
		u.Srv.URL, u.Srv.URL+"/simple", u.Srv.URL, u.Srv.URL+"/maven2", u.Srv.URL+"/cargo", u.Srv.URL+"/rubygems", u.Srv.URL+fakeregistry.NuGetOrg.Index)
	in := newInstance(t, mergeYAML(t, quiet+"  new_user_max_unverified: 0\n", upstreams, snip("fw-tls-names"), oci))
	s := newDocSite(t, in, ip)

	// On the daemon's machine: the certificate copied where the snippets
	// read it, naming threatd.example.
	out, ok := s.bash(t, t.TempDir(), s.env(t.TempDir()), s.paste(snip("fw-cert")))
	if !ok || !strings.Contains(out, "DNS:threatd.example") {
		t.Fatalf("fw-cert (ok=%v): the certificate does not name threatd.example:\n%s", ok, out)
	}
	eventually45s(t, "fw-cert-check: the daemon ready, reached by name", func() bool {
		out, ok := s.bash(t, t.TempDir(), s.env(t.TempDir()), s.paste(snip("fw-cert-check")))
		if !ok {
			t.Fatalf("fw-cert-check:\n%s", out)
		}
		return strings.Contains(out, `"status":"ready"`)
	})

	ids := map[string]string{}
	for _, r := range [][3]string{
		{"npm", "evil", "1.0.1"}, {"pypi", "evil", "1.0.1"}, {"go", "example.com/evil", "1.0.1"}, {"maven", "com.example:evil", "1.0.1"},
		{"cargo", "evil", "1.0.1"}, {"rubygems", "evil", "1.0.1"}, {"nuget", "Evil", "1.0.1"},
	} {
		ids[r[0]] = fwReport(t, in, s.d, s.tok, r[0], r[1], r[2])
	}
	if images {
		id := s.d.submit(s.tok, `{"report_type":"container","resource_identifier":"app:evil","registry":"dockerhub","threat_description":"Cryptominer in the entrypoint","severity_level":"high"}`)
		in.mustCLI("review", "verify", id)
	}
	eventually(t, "the reports in the index", func() bool {
		code, _, _ := s.d.fwGet(base+"/firewall/nuget/res/PackageBaseAddress_3.0.0/evil/1.0.1/evil.1.0.1.nupkg", s.tok)
		return code == 403
	})

	// The transcripts' commands, each run by the subtest of its client.
	var ran sync.Map
	entries := append(transcript(docSnippet(t, doc, "output", "fw-refusals")), transcript(docSnippet(t, doc, "output", "fw-refusals-more"))...)
	runTranscript := func(t *testing.T, prefix, dir string, env []string) {
		t.Helper()
		n := 0
		for _, e := range entries {
			if !strings.HasPrefix(e.command, prefix) {
				continue
			}
			n++
			ran.Store(e.command, true)
			out, _ := s.bash(t, dir, env, e.command) // gem fetch exits 0 when it fetched nothing
			t.Logf("$ %s\n%s", e.command, out)
			matchTranscript(t, e.command, e.want, out)
		}
		if n == 0 {
			t.Errorf("the transcripts show no `%s`", prefix)
		}
	}

	t.Run("clients", func(t *testing.T) {
		t.Run("npm", func(t *testing.T) {
			t.Parallel()
			needTool(t, "npm")
			home := t.TempDir()
			writeFiles(t, home, map[string]string{".npmrc": s.paste(snip("fw-npmrc"))})
			env := s.env(home)
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"package.json": `{"name":"consumer","version":"1.0.0","private":true}`})
			if out, ok := s.bash(t, dir, env, "npm install evil"); !ok || !strings.Contains(readFile(t, filepath.Join(dir, "node_modules/evil/package.json")), `"1.0.0"`) {
				t.Fatalf("npm install evil with .npmrc (ok=%v):\n%s", ok, out)
			}
			// A lockfile written against registry.npmjs.org: npm rewrites
			// its resolved URLs to the firewall.
			pinned := t.TempDir()
			pinLockfile(t, pinned, "evil", "1.0.1", "https://registry.npmjs.org/evil/-/evil-1.0.1.tgz", u.Files["/evil/-/evil-1.0.1.tgz"].Body)
			runTranscript(t, "npm ", pinned, env)
		})

		t.Run("pip", func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			env := pythonVenv(t, home, s.env(home))
			env = s.shellEnv(t, home, env, s.paste(snip("fw-pip-conf")))
			if out, ok := s.bash(t, t.TempDir(), env, "pip install evil"); !ok || !strings.Contains(out, "Successfully installed evil-1.0.0") {
				t.Fatalf("pip install evil with pip.conf (ok=%v):\n%s", ok, out)
			}
			runTranscript(t, "pip ", t.TempDir(), env)
			// The environment overrides pip.conf's cert, as the page says.
			for _, v := range []string{"CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE"} {
				out, ok := s.bash(t, t.TempDir(), append(slices.Clone(env), v+"=/etc/ssl/certs/ca-certificates.crt"), "pip download --no-deps -d dl evil==1.0.0")
				if ok || !strings.Contains(out, "CERTIFICATE_VERIFY_FAILED") {
					t.Errorf("with %s set, pip still trusts pip.conf's cert (ok=%v):\n%s", v, ok, out)
				}
			}
			// The environment alone (CI).
			home2 := t.TempDir()
			env2 := s.shellEnv(t, home2, pythonVenv(t, home2, s.env(home2)), s.paste(snip("fw-pip-env")))
			if out, ok := s.bash(t, t.TempDir(), env2, "pip install evil==1.0.0"); !ok {
				t.Fatalf("pip install with PIP_INDEX_URL and PIP_CERT:\n%s", out)
			}
		})

		t.Run("go", func(t *testing.T) {
			t.Parallel()
			needTool(t, "go")
			home := t.TempDir()
			env := s.shellEnv(t, home, s.env(home), s.paste(snip("fw-go")))
			dir := t.TempDir()
			if out, ok := s.bash(t, dir, env, "go mod init example.com/consumer && go get example.com/evil@v1.0.0"); !ok {
				t.Fatalf("go get with the Go snippet:\n%s", out)
			}
			runTranscript(t, "go ", dir, env)
		})

		t.Run("maven", func(t *testing.T) {
			t.Parallel()
			needTool(t, "mvn")
			if _, err := os.Stat("/usr/share/maven-repo/org/apache/maven/plugins/maven-dependency-plugin"); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatal("Debian's libmaven-dependency-plugin-java is not installed (CI requires it)")
				}
				t.Skip("Debian's libmaven-dependency-plugin-java and junit4 are not installed: the upstream serves mvn's dependency plugin from them")
			}
			home := t.TempDir()
			writeFiles(t, home, map[string]string{".m2/settings.xml": s.paste(snip("fw-maven-settings"))})
			env := s.shellEnv(t, home, s.env(home), s.paste(snip("fw-maven-trust")))
			pom := func(version string) string {
				return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example.app</groupId><artifactId>app</artifactId><version>1</version>
  <dependencies><dependency><groupId>com.example</groupId><artifactId>evil</artifactId><version>` + version + `</version></dependency></dependencies>
</project>
`
			}
			clean := t.TempDir()
			writeFiles(t, clean, map[string]string{"pom.xml": pom("1.0.0")})
			if out, ok := s.bash(t, clean, env, "mvn -B dependency:resolve"); !ok || !strings.Contains(out, "com.example:evil:jar:1.0.0") {
				t.Fatalf("mvn dependency:resolve with the Maven snippets (ok=%v):\n%s", ok, out)
			}
			pinned := t.TempDir()
			writeFiles(t, pinned, map[string]string{"pom.xml": pom("1.0.1")})
			runTranscript(t, "mvn ", pinned, env)
		})

		t.Run("cargo", func(t *testing.T) {
			t.Parallel()
			needTool(t, "cargo")
			home := t.TempDir()
			env := s.shellEnv(t, home, s.env(home), s.paste(snip("fw-cargo-env")))
			project := func(lock string) string {
				dir := t.TempDir()
				files := map[string]string{
					"Cargo.toml":         "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nevil = \"1\"\n",
					"src/main.rs":        "fn main() {}\n",
					".cargo/config.toml": s.paste(snip("fw-cargo-config")),
				}
				if lock != "" {
					files["Cargo.lock"] = lock
				}
				writeFiles(t, dir, files)
				return dir
			}
			dir := project("")
			if out, ok := s.bash(t, dir, env, "cargo fetch"); !ok || !strings.Contains(readFile(t, filepath.Join(dir, "Cargo.lock")), "name = \"evil\"\nversion = \"1.0.0\"") {
				t.Fatalf("cargo fetch with the cargo snippets (ok=%v):\n%s", ok, out)
			}
			runTranscript(t, "cargo ", project(cargoLock("1.0.1", u.CrateSum("evil", "1.0.1"))), env)
		})

		t.Run("bundler", func(t *testing.T) {
			t.Parallel()
			needTool(t, "bundle")
			gemfile := s.paste(snip("fw-gemfile")) + "gem \"evil\"\n"
			home := t.TempDir()
			env := s.shellEnv(t, home, s.env(home), s.paste(snip("fw-bundler")))
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"Gemfile": gemfile})
			if out, ok := s.bash(t, dir, env, "bundle install"); !ok || !strings.Contains(readFile(t, filepath.Join(dir, "Gemfile.lock")), "evil (1.0.0)") {
				t.Fatalf("bundle install with the Bundler snippets (ok=%v):\n%s", ok, out)
			}
			// The credentials in the environment instead.
			home2 := t.TempDir()
			dir2 := t.TempDir()
			writeFiles(t, dir2, map[string]string{"Gemfile": gemfile})
			if out, ok := s.bash(t, dir2, append(s.env(home2), "BUNDLE_THREATD__EXAMPLE=ci:"+s.tok, "SSL_CERT_FILE="+filepath.Join(s.etc, "cert.pem")), "bundle install"); !ok {
				t.Fatalf("bundle install with BUNDLE_THREATD__EXAMPLE:\n%s", out)
			}
			pinned := t.TempDir()
			writeFiles(t, pinned, map[string]string{"Gemfile": gemfile, "Gemfile.lock": strings.Replace(readFile(t, filepath.Join(dir, "Gemfile.lock")), "evil (1.0.0)", "evil (1.0.1)", 1)})
			runTranscript(t, "bundle ", pinned, env)
		})

		t.Run("gem", func(t *testing.T) {
			t.Parallel()
			needTool(t, "gem")
			home := t.TempDir()
			env := s.shellEnv(t, home, s.env(home), s.paste(snip("fw-gem")))
			dir := t.TempDir()
			if out, ok := s.bash(t, dir, env, "gem fetch evil -v 1.0.0"); !ok || !strings.Contains(out, "Downloaded evil-1.0.0") {
				var log []string
				for _, l := range strings.Split(s.d.logText(), "\n") {
					if strings.Contains(l, "rubygems") || strings.Contains(l, "\"status\":4") {
						log = append(log, l)
					}
				}
				t.Fatalf("gem fetch with the gem snippet (ok=%v):\n%s\n%s", ok, out, strings.Join(log, "\n"))
			}
			runTranscript(t, "gem ", dir, env)
			// gem sources --add, the page's alternative, accepts the
			// firewall (it reads specs.4.8.gz), printing the URL it adds.
			home2 := t.TempDir()
			src := "https://ci:" + s.tok + "@threatd.example:8443/functions/v1/firewall/rubygems/"
			if out, ok := client(t, t.TempDir(), append(s.env(home2), "SSL_CERT_FILE="+filepath.Join(s.etc, "cert.pem")), "gem", "sources", "--clear-all", "--add", src); !ok || !strings.Contains(out, "added to sources") {
				t.Errorf("gem sources --add (ok=%v):\n%s", ok, strings.ReplaceAll(out, s.tok, "TOKEN"))
			}
		})

		t.Run("skopeo", func(t *testing.T) {
			t.Parallel()
			if !images {
				needTool(t, "skopeo")
				needTool(t, "docker-registry")
			}
			home := t.TempDir()
			dir := t.TempDir()
			env := s.env(home)
			if out, ok := s.bash(t, dir, env, s.paste(snip("fw-skopeo"))); !ok {
				t.Fatalf("the skopeo snippet:\n%s", out)
			}
			if _, err := os.Stat(filepath.Join(dir, "nginx", "manifest.json")); err != nil {
				t.Fatalf("the skopeo snippet copied no image: %v", err)
			}
			runTranscript(t, "skopeo ", dir, env)
		})

		t.Run("nuget", func(t *testing.T) {
			t.Parallel()
			// No NuGet client runs here: read the source and credentials
			// as NuGet does, and fetch the service index with them.
			var cfg struct {
				Sources []struct {
					Key   string `xml:"key,attr"`
					Value string `xml:"value,attr"`
				} `xml:"packageSources>add"`
				Creds struct {
					Inner []byte `xml:",innerxml"`
				} `xml:"packageSourceCredentials"`
			}
			if err := xml.Unmarshal([]byte(snip("fw-nuget-config")), &cfg); err != nil || len(cfg.Sources) != 1 {
				t.Fatalf("nuget.config: %v %+v", err, cfg)
			}
			var creds struct {
				Adds []struct {
					Key   string `xml:"key,attr"`
					Value string `xml:"value,attr"`
				} `xml:"add"`
			}
			if err := xml.Unmarshal(cfg.Creds.Inner, &creds); err != nil {
				t.Fatal(err)
			}
			user, pass := "", ""
			for _, a := range creds.Adds {
				switch a.Key {
				case "Username":
					user = a.Value
				case "ClearTextPassword":
					pass = strings.ReplaceAll(a.Value, "%THREATD_TOKEN%", s.tok)
				}
			}
			c := s.httpClient(t)
			for _, p := range []string{"", "res/PackageBaseAddress_3.0.0/evil/index.json"} {
				target := cfg.Sources[0].Value
				if p != "" {
					target = strings.TrimSuffix(target, "v3/index.json") + p
				}
				req, _ := http.NewRequest("GET", target, nil)
				req.SetBasicAuth(user, pass)
				res, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || (p == "" && !strings.Contains(string(b), "https://threatd.example:8443/functions/v1/firewall/nuget/res/PackageBaseAddress_3.0.0/")) ||
					(p != "" && string(b) != `{"versions":["1.0.0"]}`) {
					t.Errorf("GET %s with nuget.config's credentials: %d %s", target, res.StatusCode, b)
				}
			}
		})

		t.Run("ci", func(t *testing.T) {
			t.Parallel()
			s.ciJobs(t, u, snip)
		})
	})
	for _, e := range entries {
		if _, ok := ran.Load(e.command); !ok {
			t.Errorf("the transcript's `%s` is run by no subtest", e.command)
		}
	}
}
