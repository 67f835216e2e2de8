// Command threatd-storage-sqlite is the SQLite storage plugin: the daemon
// starts it from plugins.dir; it is not meant to be run by hand.
package main

import (
	"github.com/threatd/threatd/cmd/internal/sqliteplugin"
	"github.com/threatd/threatd/plugins"
)

func main() { plugins.ServeStorage("sqlite", sqliteplugin.Open) }
