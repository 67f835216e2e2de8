// Command threatd-source-threatfox is the ThreatFox source plugin: it
// reads abuse.ch ThreatFox's JSON export for `threatd import threatfox`
// and scheduled sources (docs/ingestion.md).
package main

import (
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/plugins/threatfox"
)

func main() {
	plugins.ServeSource(threatfox.Source{})
}
