// Command threatd-source-osv is the OSV source plugin: it reads OSV-format
// malicious-package reports for `threatd import osv` and scheduled sources.
package main

import (
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/plugins/osv"
)

func main() {
	plugins.ServeSource(osv.Source{})
}
