package main_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// repositoryManager serves u as Artifactory and Nexus serve a registry
// they proxy: every file download (a tarball, wheel, module zip, jar,
// crate, gem or nupkg) redirected (302) to a storage host of their own,
// as Artifactory's redirect downloads and Nexus's blob stores send them;
// documents gzip-encoded when the client accepts it, chunked (no
// Content-Length), with an ETag and Cache-Control no-cache (revalidated on
// every use, answered 304 when unchanged) and the managers' own headers.
// It returns the storage host and how many files it served.
func repositoryManager(t *testing.T, u *fakeregistry.Registry) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	files := u.Srv.Config.Handler
	var served atomic.Int64
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Server", "Artifactory/7.90.10")
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(storage.Close)
	isFile := func(p string) bool {
		for _, ext := range []string{".tgz", ".whl", ".zip", ".jar", ".gem", ".nupkg", "/download"} {
			if strings.HasSuffix(p, ext) {
				return true
			}
		}
		return false
	}
	u.Srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Server", "Artifactory/7.90.10")
		h.Set("X-Artifactory-Id", "a1b2c3d4e5f6")
		h.Set("X-JFrog-Version", "Artifactory/7.90.10 79010900")
		if isFile(r.URL.Path) {
			http.Redirect(w, r, storage.URL+r.URL.RequestURI(), http.StatusFound)
			return
		}
		rec := httptest.NewRecorder()
		files.ServeHTTP(rec, r)
		res := rec.Result()
		for k, vs := range res.Header {
			if k != "Content-Length" && k != "Cache-Control" {
				h[k] = vs
			}
		}
		body := rec.Body.Bytes()
		if res.StatusCode != http.StatusOK {
			w.WriteHeader(res.StatusCode)
			_, _ = w.Write(body)
			return
		}
		sum := sha256.Sum256(body)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("Last-Modified", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat))
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && h.Get("Content-Encoding") == "" {
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			_, _ = zw.Write(body)
			_ = zw.Close()
			body = gz.Bytes()
			h.Set("Content-Encoding", "gzip")
			h.Add("Vary", "Accept-Encoding")
		}
		w.WriteHeader(http.StatusOK)
		// Chunked: written in pieces, no Content-Length.
		for len(body) > 0 {
			n := min(len(body), 4096)
			_, _ = w.Write(body[:n])
			w.(http.Flusher).Flush()
			body = body[n:]
		}
	})
	return storage, &served
}

// TestFirewallBehindRepositoryManagers: for every registry, an upstream
// shaped as a repository manager serves it (redirected downloads on
// another host named in file_hosts, gzip-encoded chunked documents
// revalidated with their ETag on every use): the firewall hides and
// refuses the reported version, and serves the clean version's bytes,
// the same as in front of the public registry, also on a second request
// answered 304 upstream.
func TestFirewallBehindRepositoryManagers(t *testing.T) {
	t.Parallel()
	u := fakeregistry.New(t)
	old := fakeregistry.OldTimes(2)
	u.NPMPackage(t, "mgr-npm", "1.0.1", "1.0.0", "1.0.1")
	u.PyPIProject(t, "mgr-py", "1.0.0", "1.0.1")
	u.GoModule(t, "example.com/mgrmod", "v1.0.0", "v1.0.1")
	u.MavenArtifact(t, "com.example", "mgr-mvn", []string{"1.0.0", "1.0.1"}, old)
	u.CargoCrate(t, "mgr-crate", []string{"1.0.0", "1.0.1"}, old)
	u.NuGetServiceIndex(fakeregistry.NuGetOrg)
	u.NuGetPackage(t, fakeregistry.NuGetOrg, "Mgr.Nuget", []string{"1.0.0", "1.0.1"}, old)
	_, err := exec.LookPath("gem")
	haveGem := err == nil || os.Getenv("CI") == "true" // under CI its absence fails the test
	if haveGem {
		rubyGem(u, t, "mgr-gem", []string{"1.0.0", "1.0.1"}, old)
	}
	storage, served := repositoryManager(t, u)
	up, st := u.Srv.URL, storage.URL
	cfg := fmt.Sprintf(`firewall:
  npm: {upstream: %[1]q, file_hosts: [%[2]q]}
  pypi: {upstream: %[3]q, file_hosts: [%[2]q]}
  go: {upstream: %[1]q, file_hosts: [%[2]q]}
  maven: {upstream: %[4]q, file_hosts: [%[2]q]}
  cargo: {upstream: %[5]q, file_hosts: [%[2]q]}
  rubygems: {upstream: %[6]q, file_hosts: [%[2]q]}
  nuget: {upstream: %[7]q, file_hosts: [%[2]q]}
`, up, st, up+"/simple", up+"/maven2", up+"/cargo", up+"/rubygems", up+"/v3/index.json")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall"
	for _, r := range []struct{ registry, name, version string }{
		{"npm", "mgr-npm", "1.0.1"}, {"pypi", "mgr-py", "1.0.1"}, {"go", "example.com/mgrmod", "v1.0.1"}, {"maven", "com.example:mgr-mvn", "1.0.1"},
		{"crates.io", "mgr-crate", "1.0.1"}, {"rubygems", "mgr-gem", "1.0.1"}, {"nuget", "mgr.nuget", "1.0.1"},
	} {
		fwReport(t, in, d, tok, r.registry, r.name, r.version)
	}
	eventually(t, "the reports in the index", func() bool {
		r := d.do("GET", base+"/check-malicious?report_type=package&resource_identifier=mgr.nuget&ecosystem=nuget&version=1.0.1", tok, "")
		return r.body["malicious"] == true
	})
	upstreamFile := func(p string) []byte {
		u.Mu.Lock()
		defer u.Mu.Unlock()
		return u.Files[p].Body
	}
	for _, c := range []struct {
		name, doc, gone, clean, cleanUpstream, blocked string
		needs                                          bool
	}{
		{"npm", "/npm/mgr-npm", `"1.0.1"`, "/npm/mgr-npm/-/mgr-npm-1.0.0.tgz", "/mgr-npm/-/mgr-npm-1.0.0.tgz", "/npm/mgr-npm/-/mgr-npm-1.0.1.tgz", true},
		{"pypi", "/pypi/simple/mgr-py/", "", "/pypi/simple/mgr-py/mgr_py-1.0.0-py3-none-any.whl", "/files/mgr_py-1.0.0-py3-none-any.whl", "/pypi/simple/mgr-py/mgr_py-1.0.1-py3-none-any.whl", true},
		{"go", "/go/example.com/mgrmod/@v/list", "v1.0.1", "/go/example.com/mgrmod/@v/v1.0.0.zip", "/example.com/mgrmod/@v/v1.0.0.zip", "/go/example.com/mgrmod/@v/v1.0.1.zip", true},
		{"maven", "/maven/com/example/mgr-mvn/maven-metadata.xml", "1.0.1", "/maven/com/example/mgr-mvn/1.0.0/mgr-mvn-1.0.0.jar", "/maven2/com/example/mgr-mvn/1.0.0/mgr-mvn-1.0.0.jar", "/maven/com/example/mgr-mvn/1.0.1/mgr-mvn-1.0.1.jar", true},
		{"cargo", "/cargo/mg/r-/mgr-crate", "", "/cargo/crates/mgr-crate/1.0.0/download", "/cargo-dl/mgr-crate/1.0.0/download", "/cargo/crates/mgr-crate/1.0.1/download", true},
		{"nuget", "/nuget/res/PackageBaseAddress_3.0.0/mgr.nuget/index.json", "1.0.1", "/nuget/res/PackageBaseAddress_3.0.0/mgr.nuget/1.0.0/mgr.nuget.1.0.0.nupkg", "/v3-flatcontainer/mgr.nuget/1.0.0/mgr.nuget.1.0.0.nupkg", "/nuget/res/PackageBaseAddress_3.0.0/mgr.nuget/1.0.1/mgr.nuget.1.0.1.nupkg", true},
		{"rubygems", "/rubygems/info/mgr-gem", "\n1.0.1 ", "/rubygems/gems/mgr-gem-1.0.0.gem", "/rubygems/gems/mgr-gem-1.0.0.gem", "/rubygems/gems/mgr-gem-1.0.1.gem", haveGem},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.needs {
				t.Skip("gem is not installed: the RubyGems upstream cannot be built")
			}
			for i := range 2 { // the second answered 304 upstream
				code, _, body := d.fwGet(fw+c.doc, tok)
				if code != 200 || c.gone != "" && strings.Contains(string(body), c.gone) {
					t.Fatalf("the document, request %d: %d %.400s", i+1, code, body)
				}
				// crates.io keeps the line marked yanked; PyPI keeps the
				// file marked yanked.
				if c.name == "cargo" && !strings.Contains(string(body), `"yanked":true`) {
					t.Fatalf("the crate's index file: %s", body)
				}
				if c.name == "pypi" && !strings.Contains(string(body), `data-yanked="Blocked by threatd: pypi mgr-py@1.0.1`) {
					t.Fatalf("the project page: %s", body)
				}
			}
			before := served.Load()
			code, _, body := d.fwGet(fw+c.clean, tok)
			if code != 200 || !bytes.Equal(body, upstreamFile(c.cleanUpstream)) || served.Load() == before {
				t.Errorf("the clean file: %d, %d bytes (want %d), from the storage host: %v", code, len(body), len(upstreamFile(c.cleanUpstream)), served.Load() > before)
			}
			if code, _, body := d.fwGet(fw+c.blocked, tok); code != 403 || !strings.Contains(string(body), "Blocked by threatd: ") {
				t.Errorf("the reported file: %d %.300s", code, body)
			}
		})
	}
}
