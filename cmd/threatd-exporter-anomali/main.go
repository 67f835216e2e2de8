// Command threatd-exporter-anomali renders the rolling-window feed for
// Anomali ThreatStream (/anomali-feed): a STIX 2.1 bundle with one indicator
// per IOC, the threat as malware, and "indicates" relationships.
package main

import (
	"github.com/threatd/threatd/cmd/internal/stixexport"
	"github.com/threatd/threatd/plugins/sdk"
)

func main() {
	sdk.ServeExporter("anomali", "Rolling-window STIX 2.1 feed for Anomali", stixexport.Exporter(func(r sdk.Request) string {
		return "anomali:" + r.Query["since"] + "|" + r.Query["hours"] + "|" + r.Query["ecosystem"]
	}))
}
