package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ociBlobSize is the image layer the firewall's image registry streams
// in the benchmark: its memory must stay flat while it does.
const ociBlobSize = 256 << 20

// ecosystemRoutes serves, beside the npm package, the same 200-version
// package as Maven, crates.io, RubyGems and NuGet publish it, each with
// the 16 MiB file as its 1.0.0 artifact and the per-version documents the
// quarantine reads publish times from; and a one-layer image whose layer
// is 256 MiB. The layer is written into dir as oci.blob, for the trivial
// handler.
func ecosystemRoutes(mux *http.ServeMux, base, dir string, file []byte) error {
	versions := make([]string, fwVersions)
	published := make([]time.Time, fwVersions)
	for i := range versions {
		versions[i] = fmt.Sprintf("1.%d.%d", i/10, i%10)
		published[i] = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour)
	}
	serve := func(body []byte, ctype string, header ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Cache-Control", "public, max-age=3600")
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			_, _ = w.Write(body)
		}
	}
	// Maven: maven-metadata.xml, a .pom per version (Last-Modified its
	// publish time), the file as 1.0.0's jar.
	var meta strings.Builder
	fmt.Fprintf(&meta, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata>\n  <groupId>com.example</groupId>\n  <artifactId>%s</artifactId>\n  <versioning>\n    <latest>%s</latest>\n    <release>%s</release>\n    <versions>\n", fwPackage, versions[fwVersions-1], versions[fwVersions-1])
	for _, v := range versions {
		fmt.Fprintf(&meta, "      <version>%s</version>\n", v)
	}
	meta.WriteString("    </versions>\n    <lastUpdated>20250109000000</lastUpdated>\n  </versioning>\n</metadata>\n")
	mux.Handle("GET /maven2/com/example/"+fwPackage+"/maven-metadata.xml", serve([]byte(meta.String()), "text/xml"))
	for i, v := range versions {
		pom := fmt.Sprintf("<project><modelVersion>4.0.0</modelVersion><groupId>com.example</groupId><artifactId>%s</artifactId><version>%s</version></project>\n", fwPackage, v)
		mux.Handle("GET /maven2/com/example/"+fwPackage+"/"+v+"/"+fwPackage+"-"+v+".pom", serve([]byte(pom), "text/xml", "Last-Modified", published[i].Format(http.TimeFormat)))
	}
	mux.Handle("GET /maven2/com/example/"+fwPackage+"/1.0.0/"+fwPackage+"-1.0.0.jar", serve(file, "application/java-archive"))
	// crates.io: config.json, the index file (pubtime on each line), the .crate.
	cfg, _ := json.Marshal(map[string]string{"dl": base + "/cargo-dl", "api": "https://crates.io"})
	mux.Handle("GET /cargo/config.json", serve(cfg, "application/json"))
	var index strings.Builder
	for i, v := range versions {
		line, _ := json.Marshal(map[string]any{"name": fwPackage, "vers": v, "deps": []any{}, "cksum": strings.Repeat("ab", 32),
			"features": map[string]any{}, "yanked": false, "v": 2, "pubtime": published[i].Format(time.RFC3339)})
		index.Write(line)
		index.WriteByte('\n')
	}
	mux.Handle("GET /cargo/fw/-b/"+fwPackage, serve([]byte(index.String()), "text/plain"))
	mux.Handle("GET /cargo-dl/"+fwPackage+"/1.0.0/download", serve(file, "application/x-tar"))
	// RubyGems: /info, the versions API's created_at, the .gem.
	info := "---\n"
	var api []map[string]any
	for i, v := range versions {
		info += v + " rake:>= 12.0|checksum:" + strings.Repeat("cd", 32) + ",ruby:>= 2.7\n"
		api = append(api, map[string]any{"number": v, "platform": "ruby", "created_at": published[i].Format("2006-01-02T15:04:05.000Z")})
	}
	apiJSON, _ := json.Marshal(api)
	mux.Handle("GET /rubygems/info/"+fwPackage, serve([]byte(info), "text/plain; charset=utf-8"))
	mux.Handle("GET /rubygems/api/v1/versions/"+fwPackage+".json", serve(apiJSON, "application/json"))
	mux.Handle("GET /rubygems/gems/"+fwPackage+"-1.0.0.gem", serve(file, "application/octet-stream"))
	// NuGet: the service index, the flat container list, a registration
	// leaf per version (published), the .nupkg.
	idx := fmt.Sprintf(`{"version":"3.0.0","resources":[{"@id":"%[1]s/v3-flatcontainer/","@type":"PackageBaseAddress/3.0.0"},{"@id":"%[1]s/v3/registration5-gz-semver2/","@type":"RegistrationsBaseUrl/3.6.0"}]}`, base)
	mux.Handle("GET /v3/index.json", serve([]byte(idx), "application/json"))
	list, _ := json.Marshal(map[string][]string{"versions": versions})
	mux.Handle("GET /v3-flatcontainer/"+fwPackage+"/index.json", serve(list, "application/json"))
	for i, v := range versions {
		leaf, _ := json.Marshal(map[string]any{"@id": base + "/v3/registration5-gz-semver2/" + fwPackage + "/" + v + ".json", "listed": true,
			"published": published[i].Format("2006-01-02T15:04:05.000Z07:00"), "packageContent": base + "/v3-flatcontainer/" + fwPackage + "/" + v + "/" + fwPackage + "." + v + ".nupkg"})
		mux.Handle("GET /v3/registration5-gz-semver2/"+fwPackage+"/"+v+".json", serve(leaf, "application/json"))
	}
	mux.Handle("GET /v3-flatcontainer/"+fwPackage+"/1.0.0/"+fwPackage+".1.0.0.nupkg", serve(file, "application/octet-stream"))
	// An image: its manifest by tag, its 256 MiB layer.
	blob := make([]byte, ociBlobSize)
	_, _ = rand.Read(blob)
	sum := sha256.Sum256(blob)
	layer := "sha256:" + hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(dir, "oci.blob"), blob, 0o644); err != nil {
		return err
	}
	manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": layer, "size": ociBlobSize},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": ociBlobSize}}})
	mux.Handle("GET /v2/", serve([]byte("{}"), "application/json"))
	mux.Handle("GET /v2/library/"+fwPackage+"/manifests/1.0", serve(manifest, "application/vnd.oci.image.manifest.v1+json"))
	mux.Handle("GET /v2/library/"+fwPackage+"/blobs/"+layer, serve(blob, "application/octet-stream", "Docker-Content-Digest", layer))
	return os.WriteFile(filepath.Join(dir, "oci.digest"), []byte(layer), 0o644)
}
