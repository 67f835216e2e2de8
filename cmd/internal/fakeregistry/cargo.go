package fakeregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// CargoCrate publishes a crate in u's sparse index (under /cargo, whose
// config.json sends downloads to /cargo-dl): a .crate per version, made
// as cargo package makes them, and an index line with its checksum and
// pubtime.
func (u *Registry) CargoCrate(t testing.TB, name string, versions []string, at []time.Time) {
	t.Helper()
	u.Put("/cargo/config.json", "application/json", 60, []byte(fmt.Sprintf(`{"dl":%q,"api":"https://crates.io"}`, u.Srv.URL+"/cargo-dl")))
	var index bytes.Buffer
	for i, v := range versions {
		crate := CrateFile(t, name, v)
		sum := sha256.Sum256(crate)
		line, _ := json.Marshal(map[string]any{"name": name, "vers": v, "deps": []any{}, "cksum": hex.EncodeToString(sum[:]),
			"features": map[string]any{}, "yanked": false, "v": 2, "pubtime": at[i].UTC().Format(time.RFC3339)})
		index.Write(line)
		index.WriteByte('\n')
		u.Put("/cargo-dl/"+name+"/"+v+"/download", "application/x-tar", 31536000, crate)
	}
	u.Put("/cargo/"+cratePath(name), "text/plain", 60, index.Bytes())
}

// CrateFile is a .crate: name-version/Cargo.toml and src/lib.rs, gzipped tar.
func CrateFile(t testing.TB, name, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"Cargo.toml", fmt.Sprintf("[package]\nname = %q\nversion = %q\nedition = \"2021\"\n", name, version)},
		{"src/lib.rs", fmt.Sprintf("pub const VERSION: &str = %q;\n", version)},
	} {
		_ = tw.WriteHeader(&tar.Header{Name: name + "-" + version + "/" + f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(0, 0)})
		_, _ = tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = gz.Close()
	return buf.Bytes()
}

// CrateSum is the sha256 of the .crate u serves for name@version.
func (u *Registry) CrateSum(name, version string) string {
	u.Mu.Lock()
	defer u.Mu.Unlock()
	sum := sha256.Sum256(u.Files["/cargo-dl/"+name+"/"+version+"/download"].Body)
	return hex.EncodeToString(sum[:])
}

// cratePath is a crate's index path (1/a, 2/ab, 3/a/abc, ab/cd/abcd).
func cratePath(name string) string {
	switch len(name) {
	case 1, 2:
		return fmt.Sprint(len(name)) + "/" + name
	case 3:
		return "3/" + name[:1] + "/" + name
	}
	return name[:2] + "/" + name[2:4] + "/" + name
}
