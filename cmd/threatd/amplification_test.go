package main_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/threatd/threatd/storage/pgtest"
)

// writeOSVRecord writes one OSV record of n affected npm packages with a details
// text of detailBytes, and returns its size.
func writeOSVRecord(t *testing.T, dir, id string, n, detailBytes int) int {
	t.Helper()
	aff := make([]map[string]any, n)
	for i := range aff {
		aff[i] = map[string]any{"package": map[string]any{"ecosystem": "npm", "name": fmt.Sprintf("%s-pkg-%05d", strings.ToLower(id), i)},
			"versions": []string{"1.0.0", "1.0.1", "1.0.2"},
			"ranges":   []map[string]any{{"type": "SEMVER", "events": []map[string]string{{"introduced": "0"}}}}}
	}
	line := "The install script reads the environment and posts it to a collector. "
	details := strings.Repeat(line, detailBytes/len(line)+1)[:detailBytes]
	b, err := json.Marshal(map[string]any{"id": id, "published": "2025-01-01T00:00:00Z", "modified": "2025-01-02T00:00:00Z",
		"summary": "Malicious code in " + id, "details": details, "affected": aff})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, id+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// pgDatabaseBytes is the size of a PostgreSQL database (after a
// checkpoint, so that what was written is on disk).
func pgDatabaseBytes(t *testing.T, dsn string) int64 {
	t.Helper()
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
	defer db.Close()
	var n int64
	if err := db.QueryRow("SELECT pg_database_size(current_database())").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// dbBytes is the size of the SQLite database and its WAL.
func dbBytes(in *instance) int64 {
	var n int64
	for _, f := range []string{"threatd.db", "threatd.db-wal"} {
		if fi, err := os.Stat(filepath.Join(in.dir, "data", f)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestImportAmplificationIsBounded: one upstream record with 5,000
// affected packages and a 90 KB details (469 KB) became a 1.01 GB database
// in 87 s, each package's report holding a copy of the text. Now the
// database grows by at most 20 times what is imported: the record is
// skipped with its reason (over import.max_affected; when that is raised,
// over the growth guard), and a record of 1,000 packages with a short text
// is imported whole.
func TestImportAmplificationIsBounded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, config, reason string
		postgres             bool
	}{
		{"default", quiet, "MAL-HOSTILE-1: 5000 affected packages, more than import.max_affected (1000): each would become a report", false},
		{"max_affected raised", quiet + "import:\n  max_affected: 10000\n", "MAL-HOSTILE-1: its 5000 reports would store about", false},
		{"postgres", quiet + "import:\n  max_affected: 10000\n", "MAL-HOSTILE-1: its 5000 reports would store about", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var in *instance
			size := func() int64 { return dbBytes(in) }
			if c.postgres {
				dsn := pgtest.Server(t).Database(t, "amplification")
				in = newInstance(t, fmt.Sprintf("storage:\n  plugin: postgres\n  dsn: %q\n%s", dsn, c.config))
				size = func() int64 { return pgDatabaseBytes(t, dsn) }
			} else {
				in = newInstance(t, c.config)
			}
			in.mustCLI("migrate")
			dir := t.TempDir()
			hostile := writeOSVRecord(t, dir, "MAL-HOSTILE-1", 5000, 90_000)
			wide := writeOSVRecord(t, dir, "MAL-WIDE-1", 1000, 60)
			input := hostile + wide
			before := size()
			r := in.cli("import", "osv", dir)
			if r.code != 0 || !strings.Contains(r.stdout+r.stderr, c.reason) || !regexp.MustCompile(`(?m)^imported\s+1000$`).MatchString(r.stdout) {
				t.Fatalf("import: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			grown := size() - before
			t.Logf("%d bytes imported, the database grew by %d bytes (%.1f times; %.1f times the record it kept)",
				input, grown, float64(grown)/float64(input), float64(grown)/float64(wide))
			if grown > 20*int64(input) {
				t.Fatalf("the database grew by %d bytes for %d bytes imported: more than 20 times", grown, input)
			}
		})
	}
}

// TestReadAmplificationIsBounded: 8 readers at once ask for the largest
// pages (TAXII objects and /threat-feed with limit=1000) of 300 reports of
// 200 KB, and two more read the npm OSV archive of them. Pages end at their
// byte budget with a cursor, and the peak resident memory of the daemon
// and its plugins stays under 512 MB (four TAXII pages of 2,000 such
// reports peaked at 1.66 GB in the daemon, 1.68 GB in the storage plugin
// and 0.91 GB in the STIX exporter). The memory counted is each process's
// own (anonymous) memory, sampled while the readers run: the database
// pages SQLite reads through its memory map are the kernel's page cache,
// shared and reclaimable, and counted in a process's resident set (VmHWM,
// logged) once read however little the process allocates.
func TestReadAmplificationIsBounded(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("tip@example.com", "--tier", "paid")
	dir := t.TempDir()
	const reports = 300
	for i := range reports {
		writeOSVRecord(t, dir, fmt.Sprintf("MAL-READ-%04d", i), 1, 200_000)
	}
	start := time.Now()
	in.mustCLI("import", "osv", dir)
	t.Logf("import of %d reports of 200 KB: %s", reports, time.Since(start).Round(time.Millisecond))
	d := in.serve()
	d.until(200, "GET", "/readyz", "", "")
	// The process tree is read again at each sample: an exporter plugin
	// still starting when the readers begin is sampled once it runs.
	sampled := sampleAnon(func() map[int]string { return processTree(t, d) })
	start = time.Now()

	// The archive streams 60 MB: no client deadline but the test's.
	streaming := *d.client
	streaming.Timeout = 0
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	get := func(c *http.Client, path string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", d.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err == nil && res.StatusCode != 200 {
			err = fmt.Errorf("%s: status %d", path, res.StatusCode)
		}
		return body, err
	}
	for range 2 {
		wg.Go(func() {
			if body, err := get(&streaming, base+"/osv/npm/all.zip"); err != nil || len(body) == 0 {
				errs <- fmt.Errorf("archive: %d bytes, %v", len(body), err)
			}
		})
	}
	for range 8 {
		wg.Go(func() {
			for _, path := range []string{"/taxii2/api/collections/threats/objects/?limit=1000", base + "/threat-feed?hours=1&limit=1000"} {
				body, err := get(&streaming, path)
				if err != nil {
					errs <- err
					return
				}
				var page struct {
					More       bool    `json:"more"`
					Next       string  `json:"next"`
					Objects    []any   `json:"objects"`
					Count      int     `json:"count"`
					NextCursor *string `json:"next_cursor"`
				}
				if err := json.Unmarshal(body, &page); err != nil {
					errs <- err
					return
				}
				// 300 reports of 200 KB do not fit a page's 4 MiB budget:
				// each page ends early with its cursor.
				if strings.Contains(path, "taxii") && (!page.More || page.Next == "" || len(page.Objects) >= 1000) {
					errs <- fmt.Errorf("TAXII page of %d objects, more %v: not cut at its byte budget", len(page.Objects), page.More)
				}
				if strings.Contains(path, "threat-feed") && (page.NextCursor == nil || page.Count >= reports) {
					errs <- fmt.Errorf("feed page of %d reports with cursor %v: not cut at its byte budget", page.Count, page.NextCursor)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("8 readers of a TAXII page and a feed page, 2 of the npm archive: %s", time.Since(start).Round(time.Millisecond))
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	anon := sampled()
	total := 0
	for pid, name := range processTree(t, d) {
		hwm := peakRSS(t, pid)
		t.Logf("%s (pid %d): peak anonymous memory %d MB (peak RSS %d MB)", name, pid, anon[pid]>>20, hwm>>20)
		if anon[pid] == 0 {
			t.Errorf("%s (pid %d) was never sampled", name, pid)
		}
		total += anon[pid]
	}
	t.Logf("peak anonymous memory of the daemon and its plugins: %d MB", total>>20)
	if total > 512<<20 {
		t.Fatalf("peak memory %d MB with 8 readers of the largest pages and 2 of the archive, want under 512 MB", total>>20)
	}
}

// processTree names the daemon's pid and its plugins' (from the log's
// "plugin started" lines).
func processTree(t *testing.T, d *daemon) map[int]string {
	t.Helper()
	pids := map[int]string{d.cmd.Process.Pid: "threatd"}
	for _, m := range regexp.MustCompile(`"msg":"plugin started","plugin":"([^"]+)".*?"pid":(\d+)`).FindAllStringSubmatch(d.logText(), -1) {
		pid, _ := strconv.Atoi(m[2])
		pids[pid] = m[1]
	}
	return pids
}

// sampleAnon samples the anonymous resident memory (RssAnon) of the
// processes pids gives every 10 ms until the function it returns is
// called, which gives each pid's peak in bytes.
func sampleAnon(pids func() map[int]string) func() map[int]int {
	stop, done := make(chan struct{}), make(chan map[int]int)
	re := regexp.MustCompile(`RssAnon:\s+(\d+) kB`)
	go func() {
		peak := map[int]int{}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			for pid := range pids() {
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
					if m := re.FindSubmatch(b); m != nil {
						kb, _ := strconv.Atoi(string(m[1]))
						peak[pid] = max(peak[pid], kb<<10)
					}
				}
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() map[int]int { close(stop); return <-done }
}

// peakRSS is a live process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("pid %d: no VmHWM", pid)
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return kb << 10
}
