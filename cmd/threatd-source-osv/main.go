// Command threatd-source-osv is the OSV source plugin: it reads OSV-format
// malicious-package reports for `threatd import osv` and scheduled sources.
package main

import (
	"os"

	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/plugins/osv"
)

func main() {
	// The host names a directory of the plugin's own: the archives' head
	// cache (plugins/osv/headcache.go).
	plugins.ServeSource(osv.Source{CacheDir: os.Getenv(plugins.CacheDirEnv)})
}
