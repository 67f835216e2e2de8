package main_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A file that is not a database, or another application's database, stops
// the daemon at start with a message naming the file.
func TestForeignOrDamagedDatabaseStopsStartUp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, want string
		write      func(t *testing.T, path string)
	}{
		{"garbage", "is not a SQLite database, or is damaged", func(t *testing.T, path string) {
			if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"foreign", "is not a threatd database (it holds the tables invoices)", func(t *testing.T, path string) {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := newInstance(t, quiet)
			path := filepath.Join(in.dir, "data", "threatd.db")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			c.write(t, path)
			before, _ := os.ReadFile(path)
			r := in.cli("serve")
			if r.code == 0 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("serve on a %s file: exit %d\n%s", c.name, r.code, r.stderr)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("the refused file was modified")
			}
		})
	}
}

// An empty file where the database should be (a database truncated by a
// failed copy or a full disk) is refused by every command but threatd
// migrate, which makes it a new database.
func TestEmptyDatabaseFileIsRefused(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	path := filepath.Join(in.dir, "data", "threatd.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"serve"}, {"user", "list"}} {
		r := in.cli(args...)
		if r.code == 0 || !strings.Contains(r.stderr, path+" is an empty file (0 bytes), not a database") || !strings.Contains(r.stderr, "run threatd migrate") {
			t.Fatalf("%v on an empty file: exit %d\n%s", args, r.code, r.stderr)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
			t.Fatalf("%v changed the empty file: %v %v", args, fi, err)
		}
	}
	if out := in.mustCLI("migrate"); !strings.Contains(out, "schema up to date (0 users") {
		t.Fatalf("migrate: %s", out)
	}
	in.mustCLI("user", "list")
}

// Damage in pages start-up does not read is found by the integrity check a
// daemon runs at start (SQLite's quick_check): healthz reports the database
// corrupt instead of "ok" before any request touches it; the request that
// reads it fails (500, no internals), and the log says so loudly.
func TestDamageFoundLaterIsReported(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("owner@example.com", "--tier", "paid")
	other := in.user("editor@example.com", "--tier", "paid")
	d := in.serve()
	id := d.submit(tok, pkg("damaged-pkg"))
	in.mustCLI("review", "verify", id)
	// A pending revision whose text spans several pages: only /threat-data
	// reads it, start-up does not.
	marker := strings.Repeat("DAMAGE-MARKER-", 1500)
	d.do("PUT", base+"/modify-threat-report", other, fmt.Sprintf(`{"threat_id":%q,"payload_description":%q}`, id, marker)).expect(t, 200, "")
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(in.dir, "data", "threatd.db")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(raw, []byte("DAMAGE-MARKER-DAMAGE-MARKER-"))
	if at < 0 {
		t.Fatal("marker not in the database file (WAL not checkpointed at stop?)")
	}
	page := at / 4096 * 4096
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, 8), int64(page)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	d = in.serve()
	// No request has read the damaged page: the start-up check finds it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := d.do("GET", "/healthz", "", "")
		if h.code == 503 {
			if st := h.body["plugins"].(map[string]any)["storage"].(map[string]any); h.body["status"] != "degraded" || st["status"] != "corrupt" {
				t.Fatalf("healthz after the start-up check: %s", h.raw)
			}
			break
		}
		if h.code != 200 || time.Now().After(deadline) {
			t.Fatalf("healthz still %d %s 30 s after start on a damaged file", h.code, h.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The plugin's log reaches the daemon's on its own pipe: it may come
	// a moment after healthz says so.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d.logText(), "quick_check"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the start-up check's finding is not logged:\n%s", d.logText())
		}
	}
	d.do("GET", base+"/check-malicious?report_type=package&ecosystem=npm&resource_identifier=damaged-pkg", tok, "").expect(t, 200, "")
	r := d.do("GET", base+"/threat-data?threat_id="+id, tok, "").expect(t, 500, "Internal server error")
	if r.body["details"] != "the database is damaged (see the server log)" || strings.Contains(r.raw, path) {
		t.Fatalf("500 body: %s", r.raw)
	}
	h := d.do("GET", "/healthz", "", "").expect(t, 503, "")
	st := h.body["plugins"].(map[string]any)["storage"].(map[string]any)
	if h.body["status"] != "degraded" || st["status"] != "corrupt" {
		t.Fatalf("healthz after damage was found: %s", h.raw)
	}
	if !strings.Contains(d.logText(), "THE DATABASE IS DAMAGED") || !strings.Contains(d.logText(), path) {
		t.Fatalf("damage not logged loudly with the file:\n%s", d.logText())
	}
}
