// Command threatd-source-datadog is the source plugin of Datadog's
// malicious-software-packages-dataset: it reads its manifests for
// `threatd import datadog` and scheduled sources (docs/ingestion.md).
package main

import (
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/plugins/datadog"
)

func main() {
	plugins.ServeSource(datadog.Source{})
}
