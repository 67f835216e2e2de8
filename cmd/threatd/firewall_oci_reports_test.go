package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// manifestDigest is the digest of tag's manifest in an OCI layout.
func manifestDigest(t *testing.T, layout, tag string) string {
	t.Helper()
	var idx struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	b, _ := os.ReadFile(filepath.Join(layout, "index.json"))
	_ = json.Unmarshal(b, &idx)
	for _, m := range idx.Manifests {
		if m.Annotations["org.opencontainers.image.ref.name"] == tag {
			return m.Digest
		}
	}
	t.Fatalf("no %s in the layout", tag)
	return ""
}

// TestFirewallOCIReportsStand: what a report refuses stays refused for as
// long as the report stands. A reported tag's digest is pinned when the
// firewall first resolves it: after the tag moves to a clean image (and a
// restart, which forgets every cache), that digest and another tag
// pointing at it are still refused. A report naming a repository without
// a tag refuses every tag of it and its tag list. A path with a registry
// host in front (docker.io/library/app) is the same image.
func TestFirewallOCIReportsStand(t *testing.T) {
	t.Parallel()
	needTool(t, "skopeo")
	registry := dockerRegistry(t)
	layout := t.TempDir()
	ociLayout(t, layout, "1.0", "bad")
	load := func(tag, to string) {
		t.Helper()
		if out, ok := skopeo(t, nil, "copy", "--dest-tls-verify=false", "oci:"+layout+":"+tag, "docker://"+registry+"/"+to); !ok {
			t.Fatalf("loading the upstream: %s", out)
		}
	}
	for tag, to := range map[string]string{"1.0": "library/app:1.0", "bad": "library/app:move"} {
		load(tag, to)
	}
	load("bad", "library/app:other")
	load("1.0", "org/whole:1.0")
	load("1.0", "org/whole:2.0")
	bad := manifestDigest(t, layout, "bad")
	cfg := fmt.Sprintf("firewall:\n  oci:\n    listen: \"127.0.0.1:0\"\n    upstream: %q\n    file_hosts: []\n", "http://"+registry)
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	d := in.serve()
	submit := func(ref string) string {
		id := d.submit(tok, fmt.Sprintf(`{"report_type":"container","resource_identifier":%q,"registry":"dockerhub","threat_description":"Cryptominer in the entrypoint","severity_level":"high"}`, ref))
		in.mustCLI("review", "verify", id)
		return id
	}
	moved, whole := submit("app:move"), submit("org/whole")
	get := func(d *daemon, p string) (int, string, http.Header) {
		t.Helper()
		m := ociListening.FindStringSubmatch(d.logText())
		if m == nil {
			t.Fatalf("no firewall oci listening line:\n%s", d.logText())
		}
		req, _ := http.NewRequest("GET", "https://"+m[1]+p, nil)
		req.SetBasicAuth("threatd", tok)
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
		res, err := in.httpsClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return res.StatusCode, b.String(), res.Header
	}
	eventually(t, "the reports in the index", func() bool {
		code, _, _ := get(d, "/v2/org/whole/manifests/1.0")
		return code == 403
	})
	refused := func(d *daemon, p, id string) {
		t.Helper()
		if code, body, _ := get(d, p); code != 403 || !strings.Contains(body, "Blocked by threatd: oci ") || !strings.Contains(body, id) || !strings.Contains(body, `"rule":"malicious"`) {
			t.Errorf("%s: %d %s, want 403 naming %s", p, code, body, id)
		}
	}
	// The reported tag, by its name and with Docker Hub's host in front:
	// refused, and what it resolves to pinned.
	refused(d, "/v2/library/app/manifests/move", moved)
	refused(d, "/v2/docker.io/library/app/manifests/move", moved)
	refused(d, "/v2/app/manifests/move", moved)
	// The whole repository: every tag, and its tag list.
	for _, p := range []string{"/v2/org/whole/manifests/1.0", "/v2/org/whole/manifests/2.0", "/v2/org/whole/tags/list"} {
		refused(d, p, whole)
	}
	if code, _, _ := get(d, "/v2/library/app/manifests/1.0"); code != 200 {
		t.Errorf("a clean tag: %d", code)
	}
	// The tag moves to a clean image; a new daemon has no cache.
	load("1.0", "library/app:move")
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	d2 := in.serve()
	eventually(t, "the new daemon's index", func() bool {
		code, _, _ := get(d2, "/v2/org/whole/manifests/1.0")
		return code == 403
	})
	refused(d2, "/v2/library/app/manifests/"+bad, moved)
	refused(d2, "/v2/library/app/manifests/other", moved)
	refused(d2, "/v2/library/app/manifests/move", moved)
	// The tag list by the name the client used, without the reported tag.
	if code, body, _ := get(d2, "/v2/docker.io/library/app/tags/list"); code != 200 || body != `{"name":"docker.io/library/app","tags":["other","1.0"]}` && body != `{"name":"docker.io/library/app","tags":["1.0","other"]}` {
		t.Errorf("a tag list: %d %s", code, body)
	}
	in.mustCLI("review", "reject", moved, "--note", "a false positive")
	eventually(t, "the pinned digest released with its report", func() bool {
		code, _, _ := get(d2, "/v2/library/app/manifests/"+bad)
		return code == 200
	})
}

// TestFirewallOCIBlobsRedirected: an upstream that sends blobs to a CDN
// (307, as Docker Hub and the registries behind repository managers do):
// skopeo copies a clean image through the firewall, the blobs fetched
// from the CDN named in file_hosts, and a reported tag is still refused.
func TestFirewallOCIBlobsRedirected(t *testing.T) {
	t.Parallel()
	needTool(t, "skopeo")
	registry := dockerRegistry(t)
	layout := t.TempDir()
	ociLayout(t, layout, "1.0", "bad")
	for _, tag := range []string{"1.0", "bad"} {
		if out, ok := skopeo(t, nil, "copy", "--dest-tls-verify=false", "oci:"+layout+":"+tag, "docker://"+registry+"/library/app:"+tag); !ok {
			t.Fatalf("loading the upstream: %s", out)
		}
	}
	target, _ := url.Parse("http://" + registry)
	var fromCDN atomic.Int64
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fromCDN.Add(1)
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(cdn.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/") {
			http.Redirect(w, r, cdn.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	cfg := fmt.Sprintf("firewall:\n  oci:\n    listen: \"127.0.0.1:0\"\n    upstream: %q\n    file_hosts: [%q]\n", front.URL, cdn.URL)
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	d := in.serve()
	m := ociListening.FindStringSubmatch(d.logText())
	if m == nil {
		t.Fatalf("no firewall oci listening line:\n%s", d.logText())
	}
	id := d.submit(tok, `{"report_type":"container","resource_identifier":"app:bad","registry":"dockerhub","threat_description":"Cryptominer in the entrypoint"}`)
	in.mustCLI("review", "verify", id)
	creds := "--src-creds=threatd:" + tok
	if out, ok := skopeo(t, in, "copy", "--src-cert-dir=CERTDIR", creds, "docker://"+m[1]+"/library/app:1.0", "dir:"+t.TempDir()); !ok || fromCDN.Load() == 0 {
		t.Fatalf("copy of a clean image whose blobs are on a CDN (%d from the CDN):\n%s", fromCDN.Load(), out)
	}
	eventually(t, "the reported tag refused", func() bool {
		out, ok := skopeo(t, in, "copy", "--src-cert-dir=CERTDIR", creds, "docker://"+m[1]+"/library/app:bad", "dir:"+t.TempDir())
		return !ok && strings.Contains(out, "Blocked by threatd: oci library/app:bad")
	})
}
