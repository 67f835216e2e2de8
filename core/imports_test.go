package core_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDomainImports keeps the domain free of HTTP, SQL and gRPC: core and
// its domain subpackages depend on the standard library, uuid, idna,
// packageurl-go and an LRU only.
func TestDomainImports(t *testing.T) {
	forbidden := []string{
		"github.com/labstack/echo", "github.com/uptrace/bun", "google.golang.org/grpc",
		"google.golang.org/protobuf", "github.com/hashicorp/go-plugin", "net/http", "modernc.org/sqlite", "github.com/knadh/koanf",
		"github.com/threatd/threatd/plugins", "github.com/threatd/threatd/storage",
		"github.com/threatd/threatd/config", "github.com/threatd/threatd/core/api",
	}
	for _, pkg := range []string{"github.com/threatd/threatd/core", "github.com/threatd/threatd/core/ioc", "github.com/threatd/threatd/core/taxii", "github.com/threatd/threatd/core/feed",
		"github.com/threatd/threatd/core/ratelimit", "github.com/threatd/threatd/core/index", "github.com/threatd/threatd/core/firewall", "github.com/threatd/threatd/core/scan", "github.com/threatd/threatd/core/versioning"} {
		for _, d := range deps(t, pkg, 5) {
			// uuid brings database/sql/driver (for Scan/Value); database/sql itself is forbidden.
			if d == "database/sql" {
				t.Errorf("%s depends on database/sql (forbidden in the domain)", pkg)
			}
			for _, f := range forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s depends on %s (forbidden in the domain)", pkg, d)
				}
			}
		}
	}
}

// TestLeavesImportNothingOfOurs keeps core/ioc and core/versioning below
// core: the indicator scanner and the version rules import no threatd
// package, so core (and every format) can build on them.
func TestLeavesImportNothingOfOurs(t *testing.T) {
	for _, leaf := range []string{"github.com/threatd/threatd/core/ioc", "github.com/threatd/threatd/core/versioning"} {
		for _, d := range deps(t, leaf, 5) {
			if strings.HasPrefix(d, "github.com/threatd/threatd/") && d != leaf {
				t.Errorf("%s depends on %s (it must import no threatd package)", leaf, d)
			}
		}
	}
}

// TestAdapterImports keeps the daemon's HTTP layer and its binary off the
// storage and format packages: they reach storage and exporters through
// the plugin processes only (core/api knows no plugins either).
func TestAdapterImports(t *testing.T) {
	for pkg, forbidden := range map[string][]string{
		"github.com/threatd/threatd/core/api": {"github.com/threatd/threatd/storage", "github.com/threatd/threatd/stix",
			"github.com/threatd/threatd/plugins/osv", "github.com/threatd/threatd/plugins", "github.com/uptrace/bun", "google.golang.org/grpc"},
		"github.com/threatd/threatd/cmd/threatd": {"github.com/threatd/threatd/storage", "github.com/threatd/threatd/stix",
			"github.com/threatd/threatd/plugins/osv", "github.com/uptrace/bun", "modernc.org/sqlite"},
	} {
		for _, d := range deps(t, pkg, 20) {
			for _, f := range forbidden {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("%s depends on %s (it must go through a plugin process)", pkg, d)
				}
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
