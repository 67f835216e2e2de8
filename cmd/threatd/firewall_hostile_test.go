package main_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hostileUpstream answers every registry's paths by what the name in them
// asks for: hugedoc a document past the firewall's bound (80 MiB, written
// as it goes), bombdoc 1 MiB of gzip that expands past it, deepdoc JSON or
// XML nested 200,000 deep, baddoc bytes that are neither, gonedoc a 404,
// and anything else a 418 with its own body; NuGet's service index names
// its flat container.
func hostileUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for range 80 {
		_, _ = zw.Write(zero)
	}
	_ = zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if r.URL.RawQuery != "" {
			p += "?" + r.URL.RawQuery // a search: the name is in its query
		}
		if r.Method == http.MethodPost {
			// A search (the VS Code gallery's): the name is in the body.
			b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			p += "?" + string(b)
		}
		xml := strings.Contains(p, "maven")
		switch {
		case p == "/v3/index.json":
			// NuGet's service index: where the hostile documents are.
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"version": "3.0.0", "resources": [{"@id": "http://%s/v3-flatcontainer/", "@type": "PackageBaseAddress/3.0.0"}]}`, r.Host)
		case strings.Contains(p, "hugedoc"):
			w.Header().Set("Content-Type", "application/json")
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for range 80 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case strings.Contains(p, "bombdoc"):
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(bomb.Bytes())
		case strings.Contains(p, "deepdoc"):
			if xml {
				_, _ = w.Write([]byte(strings.Repeat("<a>", 200000) + strings.Repeat("</a>", 200000)))
			} else {
				_, _ = w.Write([]byte(strings.Repeat("[", 200000) + strings.Repeat("]", 200000)))
			}
		case strings.Contains(p, "baddoc"):
			_, _ = w.Write([]byte("<<<{{{ not a document \x00\xff"))
		case strings.Contains(p, "gonedoc"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"error":"no such package"}`))
		default:
			w.WriteHeader(418)
			_, _ = w.Write([]byte("teapot"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFirewallHostileUpstreams: for Maven, crates.io, RubyGems, NuGet,
// Composer, Open VSX (a document and a search), the Marketplace's
// extensionquery and images, an upstream document past the firewall's bound, a gzip bomb, a
// document nested too deep or malformed is a 502 that says why, never the
// daemon's memory; an upstream that does not answer is a 502; other
// statuses pass through; the daemon serves on afterwards.
func TestFirewallHostileUpstreams(t *testing.T) {
	t.Parallel()
	h := hostileUpstream(t)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	cfg := fmt.Sprintf(`firewall:
  maven: {upstream: %[1]q}
  cargo: {upstream: %[2]q}
  rubygems: {upstream: %[1]q}
  nuget: {upstream: %[3]q}
  composer: {upstream: %[4]q}
  openvsx: {upstream: %[5]q}
  vscode: {upstream: %[6]q}
  oci:
    listen: "127.0.0.1:0"
    upstream: %[1]q
    file_hosts: []
`, h.URL+"/maven", dead, h.URL+"/v3/index.json", h.URL+"/composer", h.URL+"/openvsx", h.URL+"/gallery")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	d := in.serve()
	m := ociListening.FindStringSubmatch(d.logText())
	if m == nil {
		t.Fatalf("no OCI listener:\n%s", d.logText())
	}
	fw := d.base + base + "/firewall"
	paths := map[string]func(name string) string{
		"maven":    func(n string) string { return fw + "/maven/com/example/" + n + "/maven-metadata.xml" },
		"rubygems": func(n string) string { return fw + "/rubygems/info/" + n },
		"nuget":    func(n string) string { return fw + "/nuget/res/PackageBaseAddress_3.0.0/" + n + "/index.json" },
		"composer": func(n string) string { return fw + "/composer/p2/acme/" + n + ".json" },
		"openvsx":  func(n string) string { return fw + "/openvsx/api/acme/" + n },
		"search":   func(n string) string { return fw + "/openvsx/api/-/search?query=" + n },
		// The Marketplace's search is a POST: its body names the extension.
		"vscode": func(n string) string { return "POST " + fw + "/vscode/extensionquery " + n },
		"oci":    func(n string) string { return "https://" + m[1] + "/v2/library/" + n + "/manifests/1.0" },
	}
	get := func(url string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if f := strings.Fields(url); len(f) == 3 {
			req, _ = http.NewRequest(f[0], f[1], strings.NewReader(`{"filters":[{"criteria":[{"filterType":7,"value":"acme.`+f[2]+`"}]}],"flags":1}`))
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := d.client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return res.StatusCode, b.String()
	}
	for eco, path := range paths {
		for name, want := range map[string]string{"hugedoc": "larger than the firewall reads", "bombdoc": "larger than the firewall reads", "deepdoc": "", "baddoc": ""} {
			if eco == "rubygems" && (name == "deepdoc" || name == "baddoc") {
				continue // /info is lines of text: nothing to be malformed
			}
			if eco == "oci" && name != "hugedoc" && name != "bombdoc" {
				continue // a manifest is passed on as the upstream wrote it
			}
			code, body := get(path(name))
			if code != 502 || !strings.Contains(body, want) || strings.Contains(body, "INTERNAL") {
				t.Errorf("%s %s: %d %.300s", eco, name, code, body)
			}
		}
		code, body := get(path("gonedoc"))
		if code != 404 {
			t.Errorf("%s: an upstream 404 is %d %s", eco, code, body)
		}
	}
	if code, body := get(fw + "/cargo/config.json"); code != 502 || !strings.Contains(body, "did not answer") {
		t.Errorf("cargo with an upstream that does not answer: %d %s", code, body)
	}
	if code, body := get(fw + "/maven/com/example/other/maven-metadata.xml"); code != 418 || body != "teapot" {
		t.Errorf("maven: other statuses pass through: %d %s", code, body)
	}
	if code, _ := get(d.base + "/healthz"); code != 200 {
		t.Fatalf("the daemon after hostile upstreams: %d", code)
	}
}
