package buildtool

import (
	"net/http"
	"os"
	"os/exec"
)

func Build(dir string) error {
	cmd := exec.Command("go", "build", "./...")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

func Shell(script string) error { return exec.Command("sh", "-c", script).Run() }

func Serve(addr string) error { return http.ListenAndServe(addr, http.FileServer(http.Dir("."))) }
