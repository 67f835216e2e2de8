package main_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

// TestSIGTERMDrainsInFlightRequests freezes the storage plugin (SIGSTOP) so
// that a request is stuck inside its handler, sends the daemon SIGTERM, and
// checks that the request is still answered, and only then does the daemon
// exit and stop the plugin.
func TestSIGTERMDrainsInFlightRequests(t *testing.T) {
	in := newInstance(t, "")
	tok := in.user("drain@example.com")
	d := in.serve()
	d.do("GET", base+"/account", tok, "").expect(t, 200, "")
	pid := pluginPID(t, d.logText())
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	// Signals are delivered asynchronously: wait until the kernel reports the
	// plugin stopped before relying on it.
	eventually(t, "plugin stopped", func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		f := strings.Fields(string(stat))
		return err == nil && len(f) > 2 && f[2] == "T"
	})

	type answer struct {
		code int
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		// query-latest reads storage on every call (the token comes from cache).
		req, _ := http.NewRequest("GET", d.base+base+"/query-latest", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := d.client.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		res.Body.Close()
		done <- answer{code: res.StatusCode}
	}()
	time.Sleep(500 * time.Millisecond) // the request is now blocked in the frozen plugin
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	select {
	case <-d.exited:
		t.Fatalf("daemon exited with a request in flight\n%s", d.logText())
	case a := <-done:
		t.Fatalf("request finished while the plugin was frozen: %+v", a)
	default:
	}
	// New connections are refused once shutdown has begun.
	if _, err := tls.Dial("tcp", strings.TrimPrefix(d.base, "https://"), &tls.Config{InsecureSkipVerify: true}); err == nil {
		t.Fatal("daemon still accepts connections during shutdown")
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-done:
		if a.err != nil || a.code != 200 {
			t.Fatalf("in-flight request: %+v\n%s", a, d.logText())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("in-flight request never answered")
	}
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("daemon did not exit after draining")
	}
	if d.err != nil {
		t.Fatalf("exit status after SIGTERM: %v", d.err)
	}
	waitGone(t, pid)
}

// TestStoragePluginComesBack kills the storage plugin under a running
// daemon (kill -9): the daemon starts a new one by itself, requests meanwhile
// get a 503 with Retry-After that shows no internals, and service resumes
// with the data intact.
func TestStoragePluginComesBack(t *testing.T) {
	t.Parallel()
	// No rate limits: the loop below asks every 20 ms, and a restart that
	// took more than about a second on a loaded machine ran a free token
	// into its 60 a minute (a 429, not what this test is about).
	in := newInstance(t, quiet)
	tok := in.user("x@example.com")
	d := in.serve()
	d.do("POST", base+"/submit-threat-report", tok, pkg("kept-pkg")).expect(t, 201, "")
	d.do("GET", base+"/query-latest", tok, "").expect(t, 200, "")
	pid := pluginPID(t, d.logText())
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	var refused int
	deadline := killed.Add(10 * time.Second)
	for {
		// query-latest of a free caller reads storage on every call.
		r := d.do("GET", base+"/query-latest?ecosystem=npm", tok, "")
		if r.code == 200 {
			break
		}
		if r.code != 503 || r.hdr.Get("Retry-After") == "" || r.body["details"] != nil || strings.Contains(r.raw, "/") {
			t.Fatalf("while storage restarts: %d %v %s", r.code, r.hdr, r.raw)
		}
		refused++
		h := d.do("GET", "/healthz", "", "")
		if strings.Contains(h.raw, "plugin") && strings.Contains(h.raw, "/tmp") {
			t.Fatalf("healthz shows internals: %s", h.raw)
		}
		if time.Now().After(deadline) {
			t.Fatalf("storage did not come back within 10 s\n%s", d.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("service resumed %v after kill -9 of the storage plugin (%d requests refused meanwhile)", time.Since(killed).Round(time.Millisecond), refused)
	if !strings.Contains(d.logText(), `"msg":"storage plugin restarted"`) {
		t.Fatalf("restart not logged:\n%s", d.logText())
	}
	if newPID := pluginPIDs(d.logText()); len(newPID) < 2 || newPID[len(newPID)-1] == pid {
		t.Fatalf("no new plugin process: %v", newPID)
	}
	d.do("GET", "/healthz", "", "").expect(t, 200, "")
	r := d.do("GET", base+"/query-latest?ecosystem=npm", tok, "").expect(t, 200, "")
	_ = r
	// The report submitted before the kill is still there (pending: the
	// duplicate check finds it).
	d.do("POST", base+"/submit-threat-report", tok, pkg("kept-pkg")).expect(t, 409, "")
	d.do("POST", base+"/submit-threat-report", tok, pkg("after-restart")).expect(t, 201, "")
}

// Plugins never outlive their host: not after SIGKILL of `serve`, not after
// a CLI command dies of SIGPIPE (`threatd review list | head -c 1`).
func TestPluginsDieWithTheirHost(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "")
	marker := markProcesses(t, in)
	tok := in.user("x@example.com")
	d := in.serve()
	for i := range 50 {
		d.do("POST", base+"/submit-threat-report", tok, pkg(fmt.Sprintf("pipe-pkg-%d", i)))
	}
	plugins := processesWith(t, marker)
	if len(plugins) < 2 {
		t.Fatalf("want the storage and exporter plugins running, found %v", plugins)
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	for _, pid := range plugins {
		if pid != d.cmd.Process.Pid {
			waitGone(t, pid)
		}
	}

	// SIGPIPE: the CLI dies writing to a closed pipe.
	// (The reader is gone before the CLI writes: `true` exits at once, while
	// the CLI starts its storage plugin first.)
	cmd := exec.Command("bash", "-c", `"$0" review list --config "$1" | true; exit "${PIPESTATUS[0]}"`, testbin.Path("threatd"), in.config)
	cmd.Env = in.environ()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+int(syscall.SIGPIPE) {
		t.Fatalf("threatd review list | true: want death by SIGPIPE (exit 141), got %v %s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for left := processesWith(t, marker); len(left) > 0; left = processesWith(t, marker) {
		if time.Now().After(deadline) {
			t.Fatalf("processes left after the CLI died of SIGPIPE: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// markProcesses gives the instance's processes a TMPDIR of their own, which
// plugin processes inherit too (docs/plugins/storage.md, "Environment"),
// and returns the mark processesWith looks for.
func markProcesses(t *testing.T, in *instance) string {
	dir := filepath.Join(in.dir, "tdtest-mark")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	in.env = append(in.env, "TMPDIR="+dir)
	return "TMPDIR=" + dir + "\x00"
}

// processesWith lists the processes whose environment holds marker.
func processesWith(t *testing.T, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			continue // a zombie is already dead
		}
		if strings.Contains(string(env), marker) {
			out = append(out, pid)
		}
	}
	return out
}

// systemd stops a service by sending SIGTERM to every process of its cgroup
// at once: the plugins must outlive the daemon's shutdown, so that the last
// paid-usage counts (flushed every 5 s and at shutdown) reach storage.
func TestCountersSurviveAStopOfTheWholeGroup(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	marker := markProcesses(t, in)
	tok := in.user("paid@example.com", "--tier", "paid")
	d := in.serve()
	for range 7 {
		d.do("GET", base+"/threat-feed?hours=1", tok, "").expect(t, 200, "")
	}
	// What systemd does: SIGTERM to the daemon and its plugins together.
	for _, pid := range processesWith(t, marker) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not stop")
	}
	if d.err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", d.err, d.logText())
	}
	if strings.Contains(d.logText(), "final flush failed") {
		t.Fatalf("the final flush failed:\n%s", d.logText())
	}
	d = in.serve()
	r := d.do("GET", base+"/account", tok, "").expect(t, 200, "")
	if calls, _ := r.body["paid_calls_today"].(map[string]any); calls["/threat-feed"] != float64(7) {
		t.Fatalf("paid calls after a stop: %v", r.body["paid_calls_today"])
	}
}
