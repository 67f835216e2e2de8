package main_test

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/threatd/threatd/cmd/internal/apitest"
)

// submit posts a report and returns its id.
func (d *daemon) submit(token, body string) string {
	d.t.Helper()
	r := d.do("POST", base+"/submit-threat-report", token, body).expect(d.t, 201, "")
	return r.body["threat_id"].(string)
}

func checkPath(params ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		v.Set(params[i], params[i+1])
	}
	return base + "/check-malicious?" + v.Encode()
}

func TestQueryLatest(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	tok := in.user("l@example.com", "--tier", "paid")
	d := in.serve()
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 106 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"report_type":"package","resource_identifier":"latest-%03d","registry":"npm","threat_description":"x","severity_level":"low"}`, i)
			if i%10 == 0 {
				body = fmt.Sprintf(`{"report_type":"domain","resource_identifier":"latest-%03d.example","threat_description":"x","severity_level":"critical"}`, i)
			}
			id := d.submit(tok, body)
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
		})
	}
	wg.Wait()
	sort.Strings(ids) // a verification order unrelated to submission order
	pendingOne := ids[len(ids)-1]
	in.mustCLI(append([]string{"review", "verify"}, ids[:len(ids)-1]...)...)
	r := d.do("GET", base+"/query-latest", tok, "").expect(t, 200, "")
	threats := r.body["threats"].([]any)
	if len(threats) != 100 || r.body["count"] != float64(100) {
		t.Fatalf("count %v, %d threats; want the 100 most recent", r.body["count"], len(threats))
	}
	// Newest verification first: the last ids verified come first.
	for i, th := range threats {
		rec := th.(map[string]any)
		apitest.CheckRecord(t, rec)
		if want := ids[len(ids)-2-i]; rec["id"] != want {
			t.Fatalf("position %d: %v, want %s", i, rec["id"], want)
		}
		if rec["id"] == pendingOne || rec["status"] != "verified" {
			t.Fatal("a pending report in query-latest")
		}
	}
	r = d.do("GET", base+"/query-latest?ecosystem=npm", tok, "").expect(t, 200, "")
	for _, th := range r.body["threats"].([]any) {
		if th.(map[string]any)["registry"] != "npm" {
			t.Fatalf("ecosystem filter: %v", th)
		}
	}
	r = d.do("GET", base+"/query-latest?report_type=domain&severity_level=critical", tok, "").expect(t, 200, "")
	if n := len(r.body["threats"].([]any)); n == 0 || n > 11 {
		t.Fatalf("domain/critical: %d", n)
	}
	d.do("GET", base+"/query-latest?ecosystem=cpan", tok, "").expect(t, 400, "")
	d.do("GET", base+"/query-latest?limit=5", tok, "").expect(t, 400, "")
	d.do("POST", base+"/query-latest", tok, "").expect(t, 405, "Method not allowed")
}

// TestOneDaemonPerSQLiteFile: a second daemon on the SQLite database a
// daemon serves is refused, naming the lock and the first daemon; the CLI
// runs beside the daemon and its changes show within the bound; the lock
// goes with the daemon. (Several daemons share PostgreSQL:
// postgres_test.go.)
func TestOneDaemonPerSQLiteFile(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("two@example.com")
	a := in.serve()
	r := in.cli("serve", "--listen", "127.0.0.1:0")
	lock := filepath.Join(in.dir, "data", "threatd.db.lock")
	if r.code != 1 || !strings.Contains(r.stderr, "another threatd daemon (pid "+strconv.Itoa(a.cmd.Process.Pid)+") is serving") ||
		!strings.Contains(r.stderr, "holds the lock "+lock) {
		t.Fatalf("second daemon on one SQLite file: exit %d\n%s", r.code, r.stderr)
	}
	id := a.submit(tok, `{"report_type":"wallet","resource_identifier":"bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq","threat_description":"scam"}`)
	in.mustCLI("review", "verify", id)
	q := checkPath("report_type", "wallet", "resource_identifier", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")
	eventually(t, "verification visible", func() bool { return a.do("GET", q, tok, "").body["malicious"] == true })
	in.mustCLI("token", "revoke", "--token", tok)
	a.until(401, "GET", base+"/account", tok, "")
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	b := in.serve()
	b.do("GET", q, "", "").expect(t, 401, "")
}
