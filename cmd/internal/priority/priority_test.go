//go:build linux

package priority

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// niceOf reads the nice value of a thread or process from its stat file.
func niceOf(stat string) (int, error) {
	b, err := os.ReadFile(stat)
	if err != nil {
		return 0, err
	}
	// The fields after the command's ")": state is field 3, nice field 19.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 17 {
		return 0, fmt.Errorf("%s: %q", stat, b)
	}
	return strconv.Atoi(fields[16])
}

// TestMain runs lowered, the child of TestLower, when asked.
func TestMain(m *testing.M) {
	if os.Getenv("PRIORITY_CHILD") == "1" {
		if err := lowered(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("threads and children at nice", Batch)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestLower: in a child process of the test (so that the test's own
// threads keep their priority), Lower puts every thread at Batch, and a
// thread made and a process started after run at Batch too.
func TestLower(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "PRIORITY_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "threads and children at nice") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// lowered is TestLower's child.
func lowered() error {
	if err := Lower(Batch); err != nil {
		return err
	}
	tasks, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil || len(tasks) < 2 {
		return fmt.Errorf("%d threads: %v", len(tasks), err)
	}
	for _, s := range tasks {
		if n, err := niceOf(s); err != nil || n < Batch {
			return fmt.Errorf("%s: nice %d after Lower(%d) (%v)", s, n, Batch, err)
		}
	}
	// Threads made now (the runtime's, for goroutines that block in
	// system calls) and a process started now start at Batch too.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			runtime.LockOSThread() // a thread of its own, made now
			if n, err := niceOf("/proc/thread-self/stat"); err != nil || n < Batch {
				errs <- fmt.Errorf("a thread after Lower: nice %d (%v)", n, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	out, err := exec.Command("sh", "-c", "cut -d' ' -f19 /proc/$$/stat").Output()
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || n < Batch {
		return fmt.Errorf("a process started after Lower: nice %q (%v)", out, err)
	}
	// Lower never makes a nicer thread less nice.
	if err := Lower(Batch - 5); err != nil {
		return err
	}
	if n, err := niceOf("/proc/self/stat"); err != nil || n < Batch {
		return fmt.Errorf("lower(%d) made the process less nice: %d (%v)", Batch-5, n, err)
	}
	return nil
}
