package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/analysis"
)

// typicalNPM is an npm tarball of about size bytes of ordinary JavaScript
// spread over files of 20 KB, as a library's dist/ is.
func typicalNPM(b *testing.B, size int) (string, int) {
	b.Helper()
	chunk := `"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
const http = require("http");
function request(url, opts = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method || "GET", headers: opts.headers || {} }, (res) => {
      const chunks = []; res.on("data", (c) => chunks.push(c)); res.on("end", () => resolve(Buffer.concat(chunks)));
    });
    req.on("error", reject); req.end();
  });
}
exports.request = request;
`
	files := map[string][]byte{"package.json": []byte(`{"name":"typical","version":"1.0.0","main":"dist/index.js"}`)}
	total := 0
	for i := 0; total < size; i++ {
		body := []byte(strings.Repeat(chunk, 20_000/len(chunk)))
		files[fmt.Sprintf("dist/module%03d.js", i)] = body
		total += len(body)
	}
	return pack(b, "npm", "typical", files), total
}

// BenchmarkAnalyzeTypicalNPM: one typical 1 MB npm package through the
// rules analyzer (threatd's rules, libyara), in process; MB/s is unpacked
// text per core. The goal: at most 200 ms a package, at least 5 MB/s.
func BenchmarkAnalyzeTypicalNPM(b *testing.B) { benchAnalyze(b, 1<<20) }

// BenchmarkAnalyzeFiveMB: an npm package of 5 MB unpacked, the size up to
// which an analysis should take at most 1 s at p95.
func BenchmarkAnalyzeFiveMB(b *testing.B) { benchAnalyze(b, 5<<20) }

func benchAnalyze(b *testing.B, size int) {
	a := newAnalyzer()
	p, n := typicalNPM(b, size)
	b.SetBytes(int64(n))
	b.ResetTimer()
	for b.Loop() {
		r, err := a.Analyze(context.Background(), analysis.Target{Ecosystem: "npm", Path: p}, analysis.DefaultLimits, nil)
		if err != nil || r.Refused != "" {
			b.Fatal(err, r.Refused)
		}
	}
}
