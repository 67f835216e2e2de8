package sqliteplugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/threatd/threatd/storage"
)

// The integrity check (SQLite's quick_check) reads the whole database: 20 s
// of a core at a million reports. The plugin runs it in a child process of
// its own executable at the lowest CPU priority, so that it takes only what
// the daemon and the plugin leave idle. In the plugin's own process a thread
// at that priority held one of the Go runtime's processors while the kernel
// kept it waiting, and each garbage collection waited for it: the index
// spill's fill at start-up took a third longer beside it.

// CheckInChild makes Open run the integrity check in a child process (the
// plugin's main sets it; in-process tests check in their own process).
var CheckInChild bool

// QuickCheckArg is the plugin's first argument when it runs as that child:
// threatd-storage-sqlite quick-check <path>.
const QuickCheckArg = "quick-check"

// Exit codes of the child: the check ran (its findings on standard
// output, a line each; none: sound), the file is damaged where the check
// itself had to read (the error on standard output), the check could not
// run (the error on standard error).
const (
	checkRan     = 0
	checkCorrupt = 3
	checkFailed  = 4
)

// RunQuickCheck is the child's work: it checks the database at path and
// returns the exit code.
func RunQuickCheck(path string) int {
	problems, err := storage.QuickCheckFile(context.Background(), path)
	switch {
	case err != nil && storage.IsCorruptError(err):
		fmt.Println(err.Error())
		return checkCorrupt
	case err != nil:
		fmt.Fprintln(os.Stderr, err.Error())
		return checkFailed
	}
	for _, p := range problems {
		fmt.Println(strings.ReplaceAll(p, "\n", " "))
	}
	return checkRan
}

// childCheckMin is the database size from which the check runs in a
// child process; a smaller one is checked in the plugin's process (a
// thread at nice 19), in well under a second: a child would cost more to
// start than the check, and a daemon stopped while a starved child at
// nice 19 was still running waited for the kernel to let it exit.
const childCheckMin = 64 << 20

// checkInChild checks the database at path: in a child process at nice
// 19 (RunQuickCheck) when it holds childCheckMin or more, else in this
// process.
func checkInChild(ctx context.Context, path string) ([]string, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() < childCheckMin {
		return nil, storage.ErrCheckHere
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return runChild(ctx, exe, path)
}

// runChild runs exe quick-check path at nice 19 and reads its answer.
// When ctx ends first the child is given back the normal priority (where
// the process may: root or CAP_SYS_NICE) and killed: a process at nice 19
// on a busy machine took half a second and more to exit, while the
// plugin's stop waited for it.
func runChild(ctx context.Context, exe, path string) ([]string, error) {
	cmd := exec.CommandContext(ctx, exe, QuickCheckArg, path)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.Cancel = func() error {
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, 0)
		return cmd.Process.Kill()
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, cmd.Process.Pid, 19)
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		var problems []string
		for line := range strings.Lines(out.String()) {
			if line = strings.TrimSpace(line); line != "" {
				problems = append(problems, line)
			}
		}
		return problems, nil
	case errors.As(err, &exit) && exit.ExitCode() == checkCorrupt:
		return nil, errors.New(strings.TrimSpace(out.String()))
	default:
		return nil, fmt.Errorf("integrity check process: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
}
