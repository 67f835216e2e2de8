package core_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/threatd/threatd/"

// layers places every package under core/ (docs/architecture.md): a
// package missing from it fails TestEveryCorePackageHasALayer, so a new
// package is checked from its first commit.
var layers = map[string]string{
	// The domain and its use cases: no HTTP, SQL, gRPC or configuration.
	"core": "domain", "core/port": "domain", "core/feed": "domain", "core/taxii": "domain", "core/index": "domain",
	"core/ratelimit": "domain", "core/scan": "domain", "core/record": "domain", "core/misp": "domain",
	"core/webhooks": "domain", "core/firewall": "domain", "core/firewall/npm": "domain",
	"core/firewall/pypi": "domain", "core/firewall/goproxy": "domain", "core/firewall/registries": "domain",
	"core/firewall/cargo": "domain", "core/firewall/maven": "domain", "core/firewall/nuget": "domain", "core/firewall/composer": "domain", "core/firewall/openvsx": "domain", "core/firewall/vscode": "domain", "core/firewall/vsgallery": "domain", "core/firewall/rubygems": "domain", "core/firewall/oci": "domain", "core/community": "domain", "core/blocklist": "domain", "core/analysis": "domain", "core/exposure": "domain", "core/siem": "client",
	// Leaves: import no threatd package at all.
	"core/ioc": "leaf", "core/versioning": "leaf",
	// Outbound HTTP clients of the daemon: net/http, nothing of the
	// server, storage or plugins.
	"core/webhooks/delivery": "client", "core/firewall/cache": "client",
	// The HTTP server: echo, but storage and formats only through plugins.
	"core/api": "server", "core/web": "server",
	// The firewall's HTTP half: echo, mounted by the server, which it
	// never imports (it gets what it needs as options).
	"core/firewall/proxy": "proxy",
	// Test support, imported by tests only.
	"core/coretest": "test", "core/ioctest": "test", "core/firewall/fwtest": "test",
}

// forbidden lists, per layer, the packages (and their subpackages) a
// package of that layer must not depend on, even indirectly. database/sql
// is forbidden alone: uuid brings database/sql/driver (for Scan and
// Value).
var forbidden = map[string][]string{
	"domain": {"github.com/labstack/echo", "github.com/uptrace/bun", "google.golang.org/grpc",
		"google.golang.org/protobuf", "github.com/hashicorp/go-plugin", "net/http", "database/sql", "modernc.org/sqlite",
		"github.com/knadh/koanf", mod + "plugins", mod + "storage", mod + "stix", mod + "config", mod + "core/api", mod + "core/web"},
	"leaf": {mod},
	"client": {"github.com/labstack/echo", "github.com/uptrace/bun", "google.golang.org/grpc", "github.com/hashicorp/go-plugin",
		"database/sql", "github.com/knadh/koanf", mod + "plugins", mod + "storage", mod + "stix", mod + "config", mod + "core/api", mod + "core/web"},
	"server": {"github.com/uptrace/bun", "google.golang.org/grpc", "github.com/hashicorp/go-plugin", "modernc.org/sqlite",
		mod + "plugins", mod + "storage", mod + "stix"},
	"proxy": {"github.com/uptrace/bun", "google.golang.org/grpc", "github.com/hashicorp/go-plugin", "modernc.org/sqlite", "database/sql",
		"github.com/knadh/koanf", mod + "plugins", mod + "storage", mod + "stix", mod + "config", mod + "core/api", mod + "core/web"},
	"test": {"github.com/labstack/echo", "github.com/uptrace/bun", "google.golang.org/grpc", mod + "plugins", mod + "storage", mod + "core/api", mod + "core/web"},
}

// TestEveryCorePackageHasALayer lists the packages under core/ with go
// list and wants each in layers (and layers to name no package that is
// gone).
func TestEveryCorePackageHasALayer(t *testing.T) {
	out, err := exec.Command("go", "list", mod+"core/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 10 {
		t.Fatalf("go list named too few packages: %v", pkgs)
	}
	for _, p := range pkgs {
		if _, ok := layers[strings.TrimPrefix(p, mod)]; !ok {
			t.Errorf("%s has no layer in core/imports_test.go: place it (domain, leaf, client, server or test)", p)
		}
	}
	for p := range layers {
		if !slices.Contains(pkgs, mod+p) {
			t.Errorf("layers names %s, which go list does not list", p)
		}
	}
}

// TestDomainImports checks every package under core/ against its layer:
// the domain (core and its use-case packages) depends on the standard
// library, uuid, idna, packageurl-go and an LRU only, never on HTTP, SQL,
// gRPC, configuration or the adapters; the leaves (the indicator scanner,
// the version rules) import no threatd package, so core and every format
// build on them; the daemon's HTTP clients and server reach storage and
// formats through plugin processes only.
func TestDomainImports(t *testing.T) {
	for rel, layer := range layers {
		pkg := mod + rel
		for _, d := range deps(t, pkg, 5) {
			if d == pkg {
				continue
			}
			for _, f := range forbidden[layer] {
				if d == f || f != "database/sql" && strings.HasPrefix(d, strings.TrimSuffix(f, "/")+"/") {
					t.Errorf("%s (%s) depends on %s (forbidden in that layer)", pkg, layer, d)
				}
			}
		}
	}
}

// TestAdapterImports keeps the daemon's binary off the storage and format
// packages: it reaches storage and exporters through the plugin processes
// only.
func TestAdapterImports(t *testing.T) {
	for _, d := range deps(t, mod+"cmd/threatd", 20) {
		for _, f := range []string{mod + "storage", mod + "stix", mod + "plugins/osv", mod + "plugins/misp", "github.com/uptrace/bun", "modernc.org/sqlite"} {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("cmd/threatd depends on %s (it must go through a plugin process)", d)
			}
		}
	}
}

// deps lists every package pkg depends on, failing when go list names fewer
// than least (a broken listing must not pass as a clean one).
func deps(t *testing.T, pkg string, least int) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	ds := strings.Fields(string(out))
	if len(ds) < least {
		t.Fatalf("go list returned too few dependencies for %s: %v", pkg, ds)
	}
	return ds
}
