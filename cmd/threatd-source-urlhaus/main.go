// Command threatd-source-urlhaus is the URLhaus source plugin: it reads
// abuse.ch URLhaus's CSV export for `threatd import urlhaus` and scheduled
// sources (docs/ingestion.md).
package main

import (
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/plugins/urlhaus"
)

func main() {
	plugins.ServeSource(urlhaus.Source{})
}
