package registries

import (
	"slices"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

// TestAllServed: the adapters are the registries the policy knows, one
// each.
func TestAllServed(t *testing.T) {
	var names []string
	for _, a := range All() {
		names = append(names, a.Registry())
	}
	if !slices.Equal(names, firewall.Registries) {
		t.Fatalf("adapters for %v, policy's registries %v", names, firewall.Registries)
	}
}
