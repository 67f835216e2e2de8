//go:build linux

package plugins

import (
	"context"
	"os/exec"
	"syscall"
)

// pluginCmd is the command of one plugin process. The plugin gets its own
// process group, so that cancelling ctx kills it and anything it started
// (a child that inherited its stdout would otherwise keep go-plugin
// reading it past every timeout), and it is killed by the kernel when the
// daemon or CLI that started it dies (SIGKILL of `serve`, or SIGPIPE of
// `threatd review list | head -c 1`): a plugin never outlives its host.
// The kernel's "parent" for that signal is the thread that forked the
// plugin, so no thread of a host may end before the host does: a
// goroutine that locks its thread keeps it (storage's inBackground).
func pluginCmd(ctx context.Context, path string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		// The whole group: the plugin and whatever it started.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return cmd
}
