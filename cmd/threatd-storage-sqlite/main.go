// Command threatd-storage-sqlite is the SQLite storage plugin: the daemon
// starts it from plugins.dir; it is not meant to be run by hand.
package main

import (
	"os"

	"github.com/threatd/threatd/cmd/internal/gcpace"
	"github.com/threatd/threatd/cmd/internal/sqliteplugin"
	"github.com/threatd/threatd/plugins"
)

func main() {
	// The integrity check's child process (sqliteplugin/check.go).
	if len(os.Args) == 3 && os.Args[1] == sqliteplugin.QuickCheckArg {
		os.Exit(sqliteplugin.RunQuickCheck(os.Args[2]))
	}
	sqliteplugin.CheckInChild = true
	defer gcpace.Start()()
	plugins.ServeStorage("sqlite", sqliteplugin.Open)
}
