package main_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// ociLayout writes an OCI image layout in dir holding one small image per
// tag (a layer whose file names the tag, so each tag is its own digest).
func ociLayout(t *testing.T, dir string, tags ...string) {
	t.Helper()
	blob := func(b []byte) (string, int) {
		sum := sha256.Sum256(b)
		d := hex.EncodeToString(sum[:])
		_ = os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", d), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return "sha256:" + d, len(b)
	}
	var manifests []any
	for _, tag := range tags {
		var tarBuf bytes.Buffer
		tw := tar.NewWriter(&tarBuf)
		body := "image " + tag + "\n"
		_ = tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0)})
		_, _ = tw.Write([]byte(body))
		_ = tw.Close()
		diff := sha256.Sum256(tarBuf.Bytes())
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(tarBuf.Bytes())
		_ = zw.Close()
		layer, layerSize := blob(gz.Bytes())
		cfg, _ := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux", "config": map[string]any{},
			"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diff[:])}}})
		cfgDigest, cfgSize := blob(cfg)
		m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
			"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfgDigest, "size": cfgSize},
			"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer, "size": layerSize}}})
		md, ms := blob(m)
		manifests = append(manifests, map[string]any{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms,
			"annotations": map[string]string{"org.opencontainers.image.ref.name": tag}})
	}
	idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": manifests})
	_ = os.WriteFile(filepath.Join(dir, "index.json"), idx, 0o644)
	_ = os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
}

// dockerRegistry starts Debian's docker-registry on a free port with
// storage in a directory of its own, and returns its address.
func dockerRegistry(t *testing.T) string {
	t.Helper()
	bin := needTool(t, "docker-registry")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	_ = os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o644)
	cmd := exec.Command(bin, "serve", filepath.Join(dir, "config.yml"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	eventually(t, "docker-registry listening", func() bool {
		res, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == 200
	})
	return addr
}

// tokenGate is the upstream as Docker Hub shows itself: every request
// without its bearer token is challenged with a token service at /token,
// which hands out a pull token; with it, requests reach the registry.
func tokenGate(t *testing.T, registry string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	target, _ := url.Parse("http://" + registry)
	rp := httputil.NewSingleHostReverseProxy(target)
	var issued atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			if !strings.HasPrefix(r.URL.Query().Get("scope"), "repository:") || r.URL.Query().Get("service") != "threatd-test" {
				http.Error(w, "bad scope", 400)
				return
			}
			issued.Add(1)
			_, _ = w.Write([]byte(`{"token":"pull-token","expires_in":300}`))
			return
		}
		if r.Header.Get("Authorization") != "Bearer pull-token" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="threatd-test",scope="repository:x:pull"`, srv.URL))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &issued
}

var ociListening = regexp.MustCompile(`"msg":"firewall oci listening","address":"([^"]+)"`)

// skopeo runs the real skopeo with the daemon's certificate trusted.
func skopeo(t *testing.T, in *instance, args ...string) (string, bool) {
	t.Helper()
	bin := needTool(t, "skopeo")
	certs := t.TempDir()
	if in != nil {
		cert, _ := os.ReadFile(in.certFile())
		_ = os.WriteFile(filepath.Join(certs, "threatd.crt"), cert, 0o644)
	}
	var full []string
	full = append(full, "--insecure-policy")
	for _, a := range args {
		full = append(full, strings.ReplaceAll(a, "CERTDIR", certs))
	}
	return client(t, t.TempDir(), []string{"HOME=" + t.TempDir()}, bin, full...)
}

// TestFirewallOCI: the real skopeo pulls through the firewall's image
// registry, in front of Debian's docker-registry behind a bearer-token
// challenge that the firewall answers: a clean image copies; a reported
// tag, the digest it resolves to, and a reported digest (whatever
// registry host the report names) are refused with DENIED and the threat
// named; the tag list loses the reported tag; a withdrawal unblocks.
func TestFirewallOCI(t *testing.T) {
	t.Parallel()
	needTool(t, "skopeo")
	registry := dockerRegistry(t)
	layout := t.TempDir()
	ociLayout(t, layout, "1.0", "evil", "pinned")
	for _, tag := range []string{"1.0", "evil", "pinned"} {
		if out, ok := skopeo(t, nil, "copy", "--dest-tls-verify=false", "oci:"+layout+":"+tag, "docker://"+registry+"/library/app:"+tag); !ok {
			t.Fatalf("loading the upstream: %s", out)
		}
	}
	if out, ok := skopeo(t, nil, "copy", "--dest-tls-verify=false", "oci:"+layout+":1.0", "docker://"+registry+"/org/tool:2.0"); !ok {
		t.Fatalf("loading the upstream: %s", out)
	}
	gate, issued := tokenGate(t, registry)
	pinned := manifestDigest(t, layout, "pinned")
	evilDigest := manifestDigest(t, layout, "evil")
	cfg := fmt.Sprintf("firewall:\n  oci:\n    listen: \"127.0.0.1:0\"\n    upstream: %q\n    file_hosts: []\n", gate.URL)
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	d := in.serve()
	m := ociListening.FindStringSubmatch(d.logText())
	if m == nil {
		t.Fatalf("no firewall oci listening line:\n%s", d.logText())
	}
	host := m[1]
	submit := func(ref string) string {
		id := d.submit(tok, fmt.Sprintf(`{"report_type":"container","resource_identifier":%q,"registry":"dockerhub","threat_description":"Cryptominer in the entrypoint","severity_level":"high"}`, ref))
		in.mustCLI("review", "verify", id)
		return id
	}
	evil := submit("app:evil")                          // Docker Hub's short form: docker.io/library/app:evil
	byDigest := submit("ghcr.io/library/app@" + pinned) // another host: the host is ignored
	creds := "--src-creds=threatd:" + tok
	src := func(ref string) string { return "docker://" + host + "/" + ref }
	eventually(t, "the reports in the index", func() bool {
		for _, ref := range []string{"library/app:evil", "library/app@" + pinned} {
			out, ok := skopeo(t, in, "inspect", "--cert-dir=CERTDIR", "--creds=threatd:"+tok, "--raw", src(ref))
			if ok || !strings.Contains(out, "Blocked by threatd") {
				return false
			}
		}
		return true
	})

	t.Run("http", func(t *testing.T) {
		c := in.httpsClient()
		req, _ := http.NewRequest("GET", "https://"+host+"/v2/", nil)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 401 || res.Header.Get("WWW-Authenticate") != `Basic realm="threatd"` || res.Header.Get("Docker-Distribution-API-Version") != "registry/2.0" {
			t.Fatalf("anonymous /v2/: %d %v", res.StatusCode, res.Header)
		}
		req, _ = http.NewRequest("GET", "https://"+host+"/v2/library/app/manifests/"+evilDigest, nil)
		req.SetBasicAuth("threatd", tok)
		res, err = c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Errors []struct {
				Code, Message string
				Detail        struct {
					ThreatIDs []string `json:"threat_ids"`
				}
			}
		}
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != 403 || len(body.Errors) != 1 || body.Errors[0].Code != "DENIED" || !strings.HasPrefix(body.Errors[0].Message, "Blocked by threatd: oci library/app@"+evilDigest) ||
			len(body.Errors[0].Detail.ThreatIDs) != 1 || body.Errors[0].Detail.ThreatIDs[0] != evil {
			t.Fatalf("the digest a reported tag resolves to: %d %+v", res.StatusCode, body)
		}
		for _, p := range []string{"/v2/library/app/manifests/..%2f1.0", "/v2/Library/app/manifests/1.0", "/v2/library/app/blobs/notadigest"} {
			req, _ = http.NewRequest("GET", "https://"+host+p, nil)
			req.SetBasicAuth("threatd", tok)
			if res, err := c.Do(req); err != nil || res.StatusCode != 400 {
				t.Errorf("%s: %v %v", p, err, res)
			} else {
				res.Body.Close()
			}
		}
		if issued.Load() == 0 {
			t.Fatal("the firewall never asked the upstream's token service")
		}
	})

	t.Run("skopeo", func(t *testing.T) {
		out, ok := skopeo(t, in, "copy", "--src-cert-dir=CERTDIR", creds, src("library/app:1.0"), "dir:"+t.TempDir())
		if !ok {
			t.Fatalf("copy of a clean image:\n%s", out)
		}
		if out, ok = skopeo(t, in, "copy", "--src-cert-dir=CERTDIR", creds, src("org/tool:2.0"), "dir:"+t.TempDir()); !ok {
			t.Fatalf("copy of another clean repository:\n%s", out)
		}
		for ref, id := range map[string]string{"library/app:evil": evil, "app:evil": evil, // the short form is library/app too "library/app@" + evilDigest: evil,
			"library/app@" + pinned: byDigest, "library/app:pinned": byDigest} {
			out, ok := skopeo(t, in, "copy", "--src-cert-dir=CERTDIR", creds, src(ref), "dir:"+t.TempDir())
			if ok || !strings.Contains(out, "Blocked by threatd: oci ") || !strings.Contains(out, id) {
				t.Errorf("copy of %s:\n%s", ref, out)
			}
			t.Logf("skopeo copy of %s:\n%s", ref, out)
		}
		out, ok = skopeo(t, in, "list-tags", "--cert-dir=CERTDIR", "--creds=threatd:"+tok, src("library/app"))
		var tags struct{ Tags []string }
		if ok && json.Unmarshal([]byte(out), &tags) == nil {
			slices.Sort(tags.Tags)
		}
		if !ok || strings.Join(tags.Tags, ",") != "1.0,pinned" {
			t.Fatalf("list-tags: %s", out)
		}
		// Each refusal is a decision of the ecosystem oci.
		eventually(t, "the image decisions recorded", func() bool {
			cli := in.mustCLI("firewall", "decisions", "--json")
			return strings.Contains(cli, `"ecosystem":"oci","name":"library/app","version":"evil","purl":"pkg:docker/library/app@evil"`) && strings.Contains(cli, `"version":"`+pinned+`"`)
		})
		in.mustCLI("review", "reject", evil, "--note", "false positive")
		eventually(t, "app:evil unblocked", func() bool {
			_, ok := skopeo(t, in, "inspect", "--cert-dir=CERTDIR", "--creds=threatd:"+tok, "--raw", src("library/app:evil"))
			return ok
		})
		if out, ok = skopeo(t, in, "copy", "--src-cert-dir=CERTDIR", creds, src("library/app:evil"), "dir:"+t.TempDir()); !ok {
			t.Fatalf("after the withdrawal:\n%s", out)
		}
	})
}
