package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// The firewall's benchmark package, with 200 versions: a name no report
// names (the common case: the firewall looks it up in the index of a
// million reports, then serves the document).
const (
	fwPackage  = "fw-bench"
	fwVersions = 200
	fwFileSize = 16 << 20
	// fwFresh are the newest versions, published minutes ago: held.
	fwFresh = 3
)

// upstreamMain serves, over plain HTTP, an npm upstream for the firewall's
// benchmark: a 200-version package document and one 16 MiB tarball, both
// cacheable for an hour. It also writes them into -dir, from where the
// trivial handler serves the same bytes.
func upstreamMain(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:18445", "address")
	dir := fs.String("dir", ".", "where to write the document and the file")
	_ = fs.Parse(args)
	base := "http://" + *listen
	versions, times := map[string]any{}, map[string]string{}
	for i := range fwVersions {
		v := fmt.Sprintf("1.%d.%d", i/10, i%10)
		versions[v] = map[string]any{
			"name": fwPackage, "version": v, "description": "A package of the firewall benchmark, with the fields of a real one",
			"main": "index.js", "license": "MIT", "engines": map[string]string{"node": ">=18"},
			"dependencies": map[string]string{"left-pad": "^1.3.0", "lodash": "^4.17.21", "chalk": "^5.3.0"},
			"scripts":      map[string]string{"test": "node test.js"},
			"dist": map[string]any{"tarball": base + "/" + fwPackage + "/-/" + fwPackage + "-" + v + ".tgz",
				"shasum": "0123456789abcdef0123456789abcdef01234567", "fileCount": 12, "unpackedSize": 48213,
				"integrity": "sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="},
		}
		times[v] = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour).Format(time.RFC3339)
		if i >= fwVersions-fwFresh {
			// Published now: in quarantine (the firewall's default 48 h).
			times[v] = time.Now().UTC().Add(time.Duration(i-fwVersions) * time.Minute).Format(time.RFC3339)
		}
	}
	doc, err := json.Marshal(map[string]any{"name": fwPackage, "dist-tags": map[string]string{"latest": "1.19.9"}, "versions": versions, "time": times})
	if err != nil {
		return err
	}
	file := make([]byte, fwFileSize)
	_, _ = rand.Read(file)
	if err := os.WriteFile(filepath.Join(*dir, "doc.json"), doc, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "file.tgz"), file, 0o644); err != nil {
		return err
	}
	mux := http.NewServeMux()
	serve := func(body []byte, ctype string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(body)
		}
	}
	mux.Handle("GET /"+fwPackage, serve(doc, "application/json"))
	mux.Handle("GET /"+fwPackage+"/-/"+fwPackage+"-1.0.0.tgz", serve(file, "application/octet-stream"))
	// The latency reference: the upstream's own answer, fetched directly.
	mux.Handle("GET /direct/"+fwPackage, serve(doc, "application/json"))
	if err := extensionRoutes(mux, base, *dir, file); err != nil {
		return err
	}
	if err := ecosystemRoutes(mux, base, *dir, file); err != nil {
		return err
	}
	if err := analysisRoutes(mux, base); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}
