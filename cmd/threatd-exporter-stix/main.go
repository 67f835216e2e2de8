// Command threatd-exporter-stix renders verified threats as a STIX 2.1
// bundle (/query-latest-stix).
package main

import (
	"runtime/debug"

	"github.com/threatd/threatd/cmd/internal/stixexport"
	"github.com/threatd/threatd/plugins/sdk"
)

func main() {
	// The exporter renders the TAXII collections a page at a time: its live
	// heap is a page's objects, and its collector took a quarter of its CPU
	// in a full pull at the default of 100 %. At 400 % it runs a quarter as
	// often; the soft limit keeps a large bundle's heap bounded all the same
	// (docs/performance.md).
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(256 << 20)
	sdk.ServeExporter("stix", "STIX 2.1 bundle of verified threats", stixexport.Exporter(func(r sdk.Request) string {
		return "stix:" + r.Endpoint
	}))
}
