//go:build !linux

package plugins

import (
	"context"
	"os/exec"
)

// pluginCmd is the command of one plugin process; cancelling ctx kills it.
// (On Linux the plugin also dies with its host: see proc_linux.go.)
func pluginCmd(ctx context.Context, path string) *exec.Cmd {
	return exec.CommandContext(ctx, path)
}
