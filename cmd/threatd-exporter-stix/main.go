// Command threatd-exporter-stix renders verified threats as a STIX 2.1
// bundle (/query-latest-stix).
package main

import (
	"github.com/threatd/threatd/plugins/sdk"
	"github.com/threatd/threatd/stix"
)

func main() {
	sdk.ServeExporter("stix", "STIX 2.1 bundle of verified threats", stix.Exporter(func(r sdk.Request) string {
		return "stix:" + r.Endpoint
	}))
}
