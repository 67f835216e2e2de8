package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// cargoProject is a project depending on deps, whose crates.io is d's
// firewall (a registry that says auth-required, with tok as its token),
// with a CARGO_HOME of its own; it returns the directory and the
// environment of a cargo run there.
func cargoProject(t *testing.T, in *instance, d *daemon, tok string, deps map[string]string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	home := t.TempDir()
	var dl strings.Builder
	for name, req := range deps {
		fmt.Fprintf(&dl, "%s = %q\n", name, req)
	}
	files := map[string]string{
		"Cargo.toml":  "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n" + dl.String(),
		"src/main.rs": "fn main() {}\n",
		".cargo/config.toml": fmt.Sprintf("[registries.threatd]\nindex = %q\n\n[source.crates-io]\nreplace-with = \"threatd\"\n",
			"sparse+"+d.base+base+"/firewall/cargo/"),
	}
	for p, body := range files {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, []string{"CARGO_HOME=" + home, "CARGO_REGISTRIES_THREATD_TOKEN=" + tok, "CARGO_HTTP_CAINFO=" + in.certFile(),
		"CARGO_NET_RETRY=0", "CARGO_TERM_COLOR=never", "CARGO_REGISTRY_GLOBAL_CREDENTIAL_PROVIDERS=cargo:token"}
}

// TestFirewallCargo: the real cargo resolves and downloads through the
// firewall's sparse registry: a clean crate installs; a reported version
// is yanked in the index (cargo picks the clean one) and its .crate is
// 403, so a Cargo.lock that pins it fails with the threat named; a
// withdrawal unblocks; a private name comes from its private upstream
// whatever reports say; a version published now is held.
func TestFirewallCargo(t *testing.T) {
	t.Parallel()
	cargo := needTool(t, "cargo")
	u := fakeregistry.New(t)
	private := fakeregistry.New(t)
	old := fakeregistry.OldTimes(3)
	u.CargoCrate(t, "fw-clean-rs", []string{"1.0.0"}, old[:1])
	u.CargoCrate(t, "fw_evil_rs", []string{"1.0.0", "1.0.1"}, old[:2])
	u.CargoCrate(t, "fw-fresh-rs", []string{"1.0.0", "1.1.0"}, []time.Time{old[0], time.Now().Add(-10 * time.Minute)})
	u.CargoCrate(t, "acme-internal", []string{"9.9.9"}, old[:1])
	private.CargoCrate(t, "acme-internal", []string{"1.0.0"}, old[:1])
	cfg := fmt.Sprintf("firewall:\n  cargo:\n    upstream: %q\n    private_upstream: %q\n  private:\n    cargo: [\"acme-*\"]\n", u.Srv.URL+"/cargo", private.Srv.URL+"/cargo")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+cfg)
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall/cargo"
	evil := fwReport(t, in, d, tok, "crates.io", "fw-evil-rs", "1.0.1") // as OSV names it: - and _ alike
	fwReport(t, in, d, tok, "crates.io", "acme-internal", "")
	eventually(t, "the report in the index", func() bool {
		_, _, body := d.fwGet(fw+"/fw/_e/fw_evil_rs", tok)
		return strings.Contains(string(body), `"yanked":true`)
	})

	t.Run("protocol", func(t *testing.T) {
		code, _, body := d.fwGet(fw+"/config.json", tok)
		var cfg map[string]any
		if code != 200 || json.Unmarshal(body, &cfg) != nil || cfg["dl"] != d.base+fw+"/crates" || cfg["auth-required"] != true || cfg["api"] != nil {
			t.Fatalf("config.json: %d %s", code, body)
		}
		code, _, body = d.fwGet(fw+"/fw/_e/fw_evil_rs", tok)
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		if code != 200 || len(lines) != 2 || strings.Contains(lines[0], `"yanked":true`) || !strings.Contains(lines[1], `"yanked":true`) {
			t.Fatalf("index file: %d %s", code, body)
		}
		code, _, body = d.fwGet(fw+"/crates/fw_evil_rs/1.0.1/download", tok)
		if code != 403 || !strings.Contains(string(body), "Blocked by threatd: cargo fw_evil_rs@1.0.1 is malicious (threat_id_"+evil) {
			t.Fatalf(".crate of the reported version: %d %s", code, body)
		}
		// The block is a seen sighting of the report, counted by the daemon.
		eventually(t, "the firewall's sighting", func() bool {
			r := d.do("GET", base+"/threats/"+evil+"/sightings", tok, "")
			return strings.Contains(r.raw, `"source":"firewall"`) && strings.Contains(r.raw, `"automatic":true`)
		})
		// cargo sends the token bare; Bearer works too; none is 401.
		code, _, _ = d.fwGet(fw+"/crates/fw_evil_rs/1.0.0/download", "", "Authorization", tok)
		if code != 200 {
			t.Fatalf("bare token: %d", code)
		}
		if code, _, _ = d.fwGet(fw+"/config.json", ""); code != 401 {
			t.Fatalf("no token: %d", code)
		}
		for _, p := range []string{"/fw/_e/FW_EVIL_RS", "/crates/a%2f..%2fb/1.0.0/download", "/crates/ok/1.0.0%2f..%2f/download"} {
			if code, _, body := d.fwGet(fw+p, tok); code != 400 {
				t.Errorf("%s: %d %s", p, code, body)
			}
		}
	})

	t.Run("cargo", func(t *testing.T) {
		dir, env := cargoProject(t, in, d, tok, map[string]string{"fw-clean-rs": "1", "fw_evil_rs": "1", "acme-internal": "1", "fw-fresh-rs": "1"})
		out, ok := client(t, dir, env, cargo, "fetch")
		if !ok {
			t.Fatalf("cargo fetch of clean versions failed:\n%s", out)
		}
		lock := readFile(t, filepath.Join(dir, "Cargo.lock"))
		for _, want := range []string{"name = \"fw_evil_rs\"\nversion = \"1.0.0\"", "name = \"acme-internal\"\nversion = \"1.0.0\"", "name = \"fw-fresh-rs\"\nversion = \"1.0.0\"", "name = \"fw-clean-rs\"\nversion = \"1.0.0\""} {
			if !strings.Contains(lock, want) {
				t.Errorf("Cargo.lock lacks %q:\n%s", want, lock)
			}
		}
		// A lockfile that pins the reported version fails at its download,
		// with the threat named at the terminal.
		dir2, env2 := cargoProject(t, in, d, tok, map[string]string{"fw_evil_rs": "1"})
		pinned := fmt.Sprintf("version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n \"fw_evil_rs\",\n]\n\n[[package]]\nname = \"fw_evil_rs\"\nversion = \"1.0.1\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = %q\n",
			u.CrateSum("fw_evil_rs", "1.0.1"))
		if err := os.WriteFile(filepath.Join(dir2, "Cargo.lock"), []byte(pinned), 0o644); err != nil {
			t.Fatal(err)
		}
		out, ok = client(t, dir2, env2, cargo, "fetch", "--locked")
		if ok || !strings.Contains(out, "Blocked by threatd: cargo fw_evil_rs@1.0.1 is malicious") || !strings.Contains(out, "threat_id_"+evil) {
			t.Fatalf("cargo fetch of a Cargo.lock that pins the reported version:\n%s", out)
		}
		// A version published now is held: asked for exactly, cargo finds
		// it yanked, and its .crate says why.
		dir3, env3 := cargoProject(t, in, d, tok, map[string]string{"fw-fresh-rs": "=1.1.0"})
		out, ok = client(t, dir3, env3, cargo, "fetch")
		if ok || !strings.Contains(out, "yanked") {
			t.Fatalf("cargo fetch of a version published now:\n%s", out)
		}
		code, _, body := d.fwGet(fw+"/crates/fw-fresh-rs/1.1.0/download", tok)
		if code != 403 || !strings.Contains(apitest.TenMinutes(string(body)), "Held by threatd: cargo fw-fresh-rs@1.1.0 was published 10m ago") {
			t.Fatalf("held .crate: %d %s", code, body)
		}
		// The withdrawal unblocks: the pinned lockfile installs.
		in.mustCLI("review", "reject", evil, "--note", "false positive")
		eventually(t, "fw_evil_rs 1.0.1 unblocked", func() bool {
			code, _, _ := d.fwGet(fw+"/crates/fw_evil_rs/1.0.1/download", tok)
			return code == 200
		})
		if out, ok = client(t, dir2, env2, cargo, "fetch", "--locked"); !ok {
			t.Fatalf("after the withdrawal, cargo fetch --locked:\n%s", out)
		}
	})
}
