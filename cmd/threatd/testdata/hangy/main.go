// Command hangy is a test plugin that never completes the go-plugin
// handshake, and starts a child that keeps its stdout open: the host must
// still give up after its handshake timeout, kill both, and serve meanwhile.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		fmt.Fprintf(os.Stderr, "hangy child %d holds stdout\n", os.Getpid())
		time.Sleep(time.Hour)
		return
	}
	child := exec.Command(os.Args[0], "child")
	child.Stdout, child.Stderr = os.Stdout, os.Stderr
	if err := child.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "hangy %d started child %d\n", os.Getpid(), child.Process.Pid)
	time.Sleep(time.Hour)
}
