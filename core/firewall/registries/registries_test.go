package registries

import (
	"net/url"
	"slices"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// TestAllServed: one adapter per registry, each a package registry that
// reports name, with defaults a configuration can start from.
func TestAllServed(t *testing.T) {
	names := Names()
	if len(names) < 3 {
		t.Fatalf("registries %v", names)
	}
	seen := map[string]bool{}
	for _, a := range All() {
		reg := a.Registry()
		if seen[reg] || !slices.Contains(firewall.FirewallEcosystems, reg) || !slices.Contains(core.PackageRegistries, firewall.RegistryOfFirewall(reg)) {
			t.Errorf("adapter for %q: twice, or not a firewall ecosystem whose registry reports name (%v)", reg, firewall.FirewallEcosystems)
		}
		seen[reg] = true
		d := a.Defaults()
		for _, origin := range append([]string{d.URL}, d.FileHosts...) {
			if u, err := url.Parse(origin); err != nil || u.Scheme != "https" || u.Host == "" {
				t.Errorf("%s: default origin %q is not an https URL", reg, origin)
			}
		}
	}
}
