package main_test

import (
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// mavenProject is a project whose build extension is ext (a
// group:artifact:version Maven resolves, with its dependencies, before
// the build, without any plugin), and the command line of an mvn that
// reads central through d's firewall with tok (Basic, after the 401's
// challenge), trusting the daemon's certificate, with checksums strict.
func mavenProject(t *testing.T, in *instance, d *daemon, tok, ext string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	p := strings.Split(ext, ":")
	pom := fmt.Sprintf(`<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example.app</groupId><artifactId>app</artifactId><version>1</version><packaging>pom</packaging>
  <build><extensions><extension><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></extension></extensions></build>
</project>
`, p[0], p[1], p[2])
	settings := fmt.Sprintf(`<settings>
  <mirrors><mirror><id>threatd</id><mirrorOf>*</mirrorOf><url>%s</url></mirror></mirrors>
  <servers><server><id>threatd</id><username>threatd</username><password>%s</password></server></servers>
</settings>
`, d.base+base+"/firewall/maven/", tok)
	store := filepath.Join(dir, "trust.p12")
	if out, err := exec.Command("keytool", "-importcert", "-noprompt", "-alias", "threatd", "-file", in.certFile(),
		"-keystore", store, "-storetype", "PKCS12", "-storepass", "changeit").CombinedOutput(); err != nil {
		t.Fatalf("keytool: %v\n%s", err, out)
	}
	for name, body := range map[string]string{"pom.xml": pom, "settings.xml": settings} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, []string{"-B", "-C", "-s", filepath.Join(dir, "settings.xml"), "-Dmaven.repo.local=" + filepath.Join(dir, "repo"),
		"-Djavax.net.ssl.trustStore=" + store, "-Djavax.net.ssl.trustStorePassword=changeit", "-Djavax.net.ssl.trustStoreType=PKCS12", "validate"}
}

// TestFirewallMaven: the real mvn resolves through the firewall as a
// mirror of central: a clean artifact installs; a reported version leaves
// maven-metadata.xml (whose checksums match what is served, as mvn -C
// checks) and every file of it is 403, so a pinned dependency on it fails
// with the threat named; a withdrawal unblocks; a version published now
// is held.
func TestFirewallMaven(t *testing.T) {
	t.Parallel()
	mvn := needTool(t, "mvn")
	needTool(t, "keytool")
	u := fakeregistry.New(t)
	old := fakeregistry.OldTimes(3)
	u.MavenArtifact(t, "com.example", "fw-clean", []string{"1.0.0"}, old[:1])
	u.MavenArtifact(t, "com.example", "fw-evil", []string{"1.0.0", "1.0.1"}, old[:2])
	u.MavenArtifact(t, "com.example", "fw-fresh", []string{"1.0.0", "1.1.0"}, []time.Time{old[0], time.Now().Add(-10 * time.Minute)})
	u.MavenArtifact(t, "com.example", "ext-clean", []string{"1.0.0"}, old[:1], "com.example:fw-clean:1.0.0", "com.example:fw-evil:[1.0,2.0)")
	u.MavenArtifact(t, "com.example", "ext-pinned", []string{"1.0.0"}, old[:1], "com.example:fw-evil:1.0.1")
	// Maven adds plexus-utils 1.1 to a build extension that does not depend on it.
	u.MavenArtifact(t, "org.codehaus.plexus", "plexus-utils", []string{"1.1"}, old[:1])
	u.MavenArtifact(t, "com.example", "ext-fresh", []string{"1.0.0"}, old[:1], "com.example:fw-fresh:1.1.0")
	// 3,000 versions in deploy order, the newest published now.
	many := make([]string, 3000)
	manyAt := make([]time.Time, len(many))
	for i := range many {
		many[i], manyAt[i] = fmt.Sprintf("1.%d.0", i), time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Hour)
	}
	manyAt[len(many)-1] = time.Now().Add(-10 * time.Minute)
	u.MavenArtifact(t, "com.example", "fw-many", many, manyAt)
	cfg := fmt.Sprintf("firewall:\n  maven:\n    upstream: %q\n  private:\n    maven: [\"com.acme:*\"]\n", u.Srv.URL+"/maven2")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall/maven/com/example"
	evil := fwReport(t, in, d, tok, "maven", "com.example:fw-evil", "1.0.1")
	eventually(t, "the report in the index", func() bool {
		_, _, body := d.fwGet(fw+"/fw-evil/maven-metadata.xml", tok)
		return !strings.Contains(string(body), "1.0.1")
	})

	t.Run("many versions, each spelling", func(t *testing.T) {
		// The newest FactsPerDocument versions' times are read, not 3,000;
		// the checksums are the document's, read no time again.
		poms := func() int {
			n := 0
			for _, v := range many {
				n += u.HitsOf("/maven2/com/example/fw-many/" + v + "/fw-many-" + v + ".pom")
			}
			return n
		}
		code, _, meta := d.fwGet(fw+"/fw-many/maven-metadata.xml", tok)
		if code != 200 || strings.Contains(string(meta), "<version>1.2999.0</version>") || !strings.Contains(string(meta), "<latest>1.2998.0</latest>") {
			t.Fatalf("metadata of 3,000 versions: %d %.300s", code, meta)
		}
		read := poms()
		for _, ext := range []string{".sha1", ".md5", ".sha256", ".sha512"} {
			if code, _, _ := d.fwGet(fw+"/fw-many/maven-metadata.xml"+ext, tok); code != 200 {
				t.Errorf("metadata%s: %d", ext, code)
			}
		}
		if read > 64 || poms() != read {
			t.Errorf("%d .pom requests for the document, %d more for its checksums: want at most 64, then none", read, poms()-read)
		}
		code, _, body := d.fwGet(fw+"/fw-many/1.2999.0/fw-many-1.2999.0.jar", tok)
		if code != 403 || !strings.Contains(apitest.TenMinutes(string(body)), "Held by threatd: maven com.example:fw-many@1.2999.0 was published 10m ago") {
			t.Errorf("the newest version's jar: %d %s", code, body)
		}
		if code, _, _ := d.fwGet(fw+"/fw-many/1.3.0/fw-many-1.3.0.jar", tok); code != 200 {
			t.Errorf("an old version's jar: %d", code)
		}
		// A blocked version written with an entity or as CDATA is still
		// that version: dropped.
		u.Put("/maven2/com/example/fw-evil/maven-metadata.xml", "text/xml", 1, []byte("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata>\n  <groupId>com.example</groupId>\n  <artifactId>fw-evil</artifactId>\n  <versioning>\n    <latest>1.0.1</latest>\n    <release>1.0.1</release>\n    <versions>\n      <version>1.0.0</version>\n      <version>1.0.&#49;</version>\n      <version><![CDATA[1.0.1]]></version>\n    </versions>\n  </versioning>\n</metadata>\n"))
		eventually(t, "the spelled document served", func() bool {
			_, _, meta := d.fwGet(fw+"/fw-evil/maven-metadata.xml", tok)
			return !strings.Contains(string(meta), "1.0.1") && strings.Contains(string(meta), "<version>1.0.0</version>") && strings.Contains(string(meta), "<latest>1.0.0</latest>")
		})
		u.MavenArtifact(t, "com.example", "fw-evil", []string{"1.0.0", "1.0.1"}, old[:2])
	})

	t.Run("protocol", func(t *testing.T) {
		code, _, meta := d.fwGet(fw+"/fw-evil/maven-metadata.xml", tok)
		if code != 200 || !strings.Contains(string(meta), "<latest>1.0.0</latest>") || !strings.Contains(string(meta), "<release>1.0.0</release>") ||
			strings.Count(string(meta), "<version>") != 1 {
			t.Fatalf("metadata: %d %s", code, meta)
		}
		s1, s5 := sha1.Sum(meta), md5.Sum(meta)
		for ext, want := range map[string]string{".sha1": hex.EncodeToString(s1[:]), ".md5": hex.EncodeToString(s5[:])} {
			if code, _, body := d.fwGet(fw+"/fw-evil/maven-metadata.xml"+ext, tok); code != 200 || string(body) != want {
				t.Errorf("metadata%s: %d %s, want %s", ext, code, body, want)
			}
		}
		for _, f := range []string{"fw-evil-1.0.1.pom", "fw-evil-1.0.1.jar", "fw-evil-1.0.1.jar.sha1", "fw-evil-1.0.1-sources.jar"} {
			code, _, body := d.fwGet(fw+"/fw-evil/1.0.1/"+f, tok)
			if code != 403 || !strings.Contains(string(body), "Blocked by threatd: maven com.example:fw-evil@1.0.1 is malicious (threat_id_"+evil) {
				t.Errorf("%s: %d %s", f, code, body)
			}
		}
		if code, _, body := d.fwGet(fw+"/fw-evil/1.0.0/fw-evil-1.0.0.jar", tok); code != 200 {
			t.Errorf("clean jar: %d %s", code, body)
		}
		// A private name is never fetched from the public upstream.
		if code, _, body := d.fwGet(base+"/firewall/maven/com/acme/internal/maven-metadata.xml", tok); code != 404 || !strings.Contains(string(body), "firewall.maven.private_upstream") {
			t.Errorf("private name: %d %s", code, body)
		}
		for _, p := range []string{"/fw-evil/..%2f..%2fx/maven-metadata.xml", "/fw-evil/1.0.0/%2e%2e/fw-evil-1.0.0.jar"} {
			if code, _, body := d.fwGet(fw+p, tok); code != 400 {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
	})

	t.Run("mvn", func(t *testing.T) {
		dir, args := mavenProject(t, in, d, tok, "com.example:ext-clean:1.0.0")
		out, ok := client(t, dir, nil, mvn, args...)
		if !ok || strings.Contains(out, "Checksum validation failed") {
			t.Fatalf("mvn with clean dependencies:\n%s", out)
		}
		// The range resolved to the clean version, the reported one never fetched.
		repo := filepath.Join(dir, "repo", "com", "example", "fw-evil")
		if _, err := os.Stat(filepath.Join(repo, "1.0.0", "fw-evil-1.0.0.jar")); err != nil {
			t.Fatalf("fw-evil 1.0.0 not installed: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(repo, "1.0.1")); err == nil {
			t.Fatalf("fw-evil 1.0.1 reached the local repository")
		}
		dir, args = mavenProject(t, in, d, tok, "com.example:ext-pinned:1.0.0")
		out, ok = client(t, dir, nil, mvn, args...)
		if ok || !strings.Contains(out, "Blocked by threatd: maven com.example:fw-evil@1.0.1 is malicious") || !strings.Contains(out, evil) {
			t.Fatalf("mvn with a pinned dependency on the reported version:\n%s", out)
		}
		t.Logf("mvn with a pinned dependency on the reported version:\n%s", out)
		fresh, fargs := mavenProject(t, in, d, tok, "com.example:ext-fresh:1.0.0")
		out, ok = client(t, fresh, nil, mvn, fargs...)
		if ok || !strings.Contains(apitest.TenMinutes(out), "Held by threatd: maven com.example:fw-fresh@1.1.0 was published 10m ago") {
			t.Fatalf("mvn with a dependency published now:\n%s", out)
		}
		in.mustCLI("review", "reject", evil, "--note", "false positive")
		eventually(t, "fw-evil 1.0.1 unblocked", func() bool {
			code, _, _ := d.fwGet(fw+"/fw-evil/1.0.1/fw-evil-1.0.1.jar", tok)
			return code == 200
		})
		if out, ok = client(t, dir, nil, mvn, args...); !ok {
			t.Fatalf("after the withdrawal, mvn:\n%s", out)
		}
	})
}
