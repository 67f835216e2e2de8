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
	// often. The soft limit of 48 MiB holds the heap where it was when many
	// large pages render at once (8 readers of pages of 200 KB reports: 55
	// MB of RSS at 100 %, 79 MB at 400 % without it, 55-57 MB with it), and
	// costs a pull nothing measurable (docs/performance.md).
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(48 << 20)
	sdk.ServeExporter("stix", "STIX 2.1 bundle of verified threats", stixexport.Exporter(func(r sdk.Request) string {
		return "stix:" + r.Endpoint
	}))
}
