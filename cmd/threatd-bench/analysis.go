package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// anaPackages are the packages whose new versions package analysis reads
// beside the firewall's load (fw-ana-0 …): each a document of two
// versions, 1.0.0 from last year and 1.0.1 published now (in quarantine,
// so listing it queues its analysis), and a tarball of about 200 KB of
// ordinary JavaScript, the same bytes for every version.
const anaPackages = 1000

// anaTarball is an npm tarball of ordinary JavaScript, about size bytes
// unpacked over files of 20 KB.
func anaTarball(size int) ([]byte, error) {
	chunk := `"use strict";
const http = require("http");
function request(url, opts = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method || "GET" }, (res) => {
      const chunks = []; res.on("data", (c) => chunks.push(c)); res.on("end", () => resolve(Buffer.concat(chunks)));
    });
    req.on("error", reject); req.end();
  });
}
exports.request = request;
`
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	write := func(name string, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := write("package.json", []byte(`{"name":"fw-ana","version":"1.0.0","main":"dist/index.js"}`)); err != nil {
		return nil, err
	}
	body := []byte(strings.Repeat(chunk, 20_000/len(chunk)))
	for i := 0; i*len(body) < size; i++ {
		if err := write(fmt.Sprintf("dist/module%03d.js", i), body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// analysisRoutes serves the anaPackages documents and their tarballs.
func analysisRoutes(mux *http.ServeMux, base string) error {
	tgz, err := anaTarball(200 << 10)
	if err != nil {
		return err
	}
	old := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	// fw-tiny: one old version of a 1 KB tarball, the ledger's load
	// (served, 2,000 a second); fw-exp: the version whose million ledger
	// rows the bench writes.
	tiny := tgz[:min(len(tgz), 1024)]
	for _, name := range []string{"fw-tiny", "fw-exp"} {
		doc, err := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": "1.0.0"},
			"versions": map[string]any{"1.0.0": map[string]any{"name": name, "version": "1.0.0", "dist": map[string]any{"tarball": base + "/" + name + "/-/" + name + "-1.0.0.tgz"}}},
			"time":     map[string]string{"1.0.0": old}})
		if err != nil {
			return err
		}
		mux.HandleFunc("GET /"+name, cached(doc, "application/json"))
		mux.HandleFunc("GET /"+name+"/-/"+name+"-1.0.0.tgz", cached(tiny, "application/octet-stream"))
	}
	for i := range anaPackages {
		name := fmt.Sprintf("fw-ana-%d", i)
		versions := map[string]any{}
		for _, v := range []string{"1.0.0", "1.0.1"} {
			versions[v] = map[string]any{"name": name, "version": v, "dist": map[string]any{"tarball": base + "/" + name + "/-/" + name + "-" + v + ".tgz"}}
			mux.HandleFunc("GET /"+name+"/-/"+name+"-"+v+".tgz", cached(tgz, "application/octet-stream"))
		}
		doc, err := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": "1.0.1"}, "versions": versions,
			"time": map[string]string{"1.0.0": old, "1.0.1": time.Now().UTC().Format(time.RFC3339)}})
		if err != nil {
			return err
		}
		mux.HandleFunc("GET /"+name, cached(doc, "application/json"))
	}
	return nil
}

// cached serves body as contentType, cacheable for an hour.
func cached(body []byte, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(body)
	}
}
