package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Sizes of the editor-extension and Composer rows (docs/performance.md).
const (
	vsixSize         = 50 << 20
	composerVersions = 500
)

// extensionRoutes serves an extension (fwbench.fw-bench) as Open VSX's
// VS Code gallery answers it, 200 versions, its 1.0.0 .vsix of 50 MB
// (written into dir as vsix.blob, for the trivial handler); and a
// Composer package (vendor/fw-bench) of 500 versions in the minified p2
// form, its 1.0.0 dist the 16 MiB file.
func extensionRoutes(mux *http.ServeMux, base, dir string, file []byte) error {
	serve := func(body []byte, ctype string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(body)
		}
	}
	var versions []map[string]any
	for i := fwVersions - 1; i >= 0; i-- {
		v := fmt.Sprintf("1.%d.%d", i/10, i%10)
		asset := base + "/openvsx/vscode/asset/fwbench/" + fwPackage + "/" + v
		versions = append(versions, map[string]any{"version": v, "flags": "validated",
			"lastUpdated": time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour).Format("2006-01-02T15:04:05.000Z"),
			"assetUri":    asset, "fallbackAssetUri": asset,
			"files": []map[string]string{{"assetType": "Microsoft.VisualStudio.Services.VSIXPackage", "source": asset + "/Microsoft.VisualStudio.Services.VSIXPackage"},
				{"assetType": "Microsoft.VisualStudio.Code.Manifest", "source": asset + "/Microsoft.VisualStudio.Code.Manifest"},
				{"assetType": "Microsoft.VisualStudio.Services.Icons.Default", "source": asset + "/Microsoft.VisualStudio.Services.Icons.Default"}},
			"properties": []map[string]string{{"key": "Microsoft.VisualStudio.Code.Engine", "value": "^1.80.0"}, {"key": "Microsoft.VisualStudio.Code.ExtensionDependencies", "value": ""}}})
	}
	answer, _ := json.Marshal(map[string]any{"results": []any{map[string]any{
		"extensions": []any{map[string]any{"publisher": map[string]any{"publisherId": "fwbench", "publisherName": "fwbench", "displayName": "fw bench", "flags": "verified"},
			"extensionId": "fwbench." + fwPackage, "extensionName": fwPackage, "displayName": "fw bench", "flags": "validated, public",
			"lastUpdated": "2025-01-09T07:00:00.000Z", "shortDescription": "A benchmark extension", "versions": versions}},
		"pagingToken":    nil,
		"resultMetadata": []any{map[string]any{"metadataType": "ResultCount", "metadataItems": []any{map[string]any{"name": "TotalCount", "count": 1}}}}}}})
	mux.Handle("POST /openvsx/vscode/gallery/extensionquery", serve(answer, "application/json"))
	vsix := make([]byte, vsixSize)
	_, _ = rand.Read(vsix)
	copy(vsix, "PK\x03\x04")
	if err := os.WriteFile(filepath.Join(dir, "vsix.blob"), vsix, 0o644); err != nil {
		return err
	}
	mux.Handle("GET /openvsx/vscode/asset/fwbench/"+fwPackage+"/1.0.0/Microsoft.VisualStudio.Services.VSIXPackage", serve(vsix, "application/octet-stream"))
	// The per-version documents the quarantine reads a download's time from.
	for i := 0; i < fwVersions; i++ {
		v := fmt.Sprintf("1.%d.%d", i/10, i%10)
		doc, _ := json.Marshal(map[string]any{"namespace": "fwbench", "name": fwPackage, "version": v,
			"timestamp": time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour).Format(time.RFC3339)})
		mux.Handle("GET /openvsx/api/fwbench/"+fwPackage+"/"+v, serve(doc, "application/json"))
	}
	// Composer: packages.json, the p2 document (minified: each version
	// after the first lists what differs), the 1.0.0 dist.
	mux.Handle("GET /composer/packages.json", serve([]byte(`{"packages":[],"metadata-url":"/p2/%package%.json"}`), "application/json"))
	var list []map[string]any
	for i := composerVersions - 1; i >= 0; i-- {
		v := fmt.Sprintf("1.%d.%d", i/10, i%10)
		ref := fmt.Sprintf("%040x", i+1)
		e := map[string]any{"version": v, "version_normalized": v + ".0", "time": time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour).Format("2006-01-02T15:04:05+00:00"),
			"dist":   map[string]any{"type": "zip", "url": base + "/composer-dist/" + ref + ".zip", "reference": ref, "shasum": ""},
			"source": map[string]any{"type": "git", "url": "https://github.invalid/vendor/fw-bench.git", "reference": ref}}
		if i == composerVersions-1 {
			e["name"], e["type"], e["license"] = "vendor/"+fwPackage, "library", []string{"MIT"}
			e["require"] = map[string]any{"php": ">=8.1"}
			e["autoload"] = map[string]any{"psr-4": map[string]any{"Vendor\\FwBench\\": "src/"}}
			e["description"] = "A benchmark package"
		}
		list = append(list, e)
	}
	p2, _ := json.Marshal(map[string]any{"packages": map[string]any{"vendor/" + fwPackage: list}, "minified": "composer/2.0"})
	mux.Handle("GET /composer/p2/vendor/"+fwPackage+".json", serve(p2, "application/json"))
	mux.Handle("GET /composer-dist/"+fmt.Sprintf("%040x", 1)+".zip", serve(file, "application/zip"))
	return nil
}
