// Command threatd-exporter-stix renders verified threats as a STIX 2.1
// bundle (/query-latest-stix).
package main

import (
	"github.com/threatd/threatd/cmd/internal/stixexport"
	"github.com/threatd/threatd/plugins/sdk"
)

func main() {
	sdk.ServeExporter("stix", "STIX 2.1 bundle of verified threats", stixexport.Exporter(func(r sdk.Request) string {
		return "stix:" + r.Endpoint
	}))
}
