package main_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/storage/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// pgInstance is an instance whose storage is a fresh database on the
// throwaway PostgreSQL server.
func pgInstance(t *testing.T, extraYAML string) *instance {
	t.Helper()
	dsn := pgtest.Server(t).Database(t, t.Name())
	return newInstance(t, fmt.Sprintf("storage:\n  plugin: postgres\n  dsn: %q\n%s", dsn, extraYAML))
}

// concurrently sends n requests at once, request i to daemons[i%len], and
// counts the statuses.
func concurrently(n int, daemons []*daemon, req func(i int) (string, string, string, string)) map[int]int {
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			method, path, token, body := req(i)
			r := daemons[i%len(daemons)].do(method, path, token, body)
			mu.Lock()
			got[r.code]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return got
}

func TestPostgresSeveralDaemonsKeepTheRules(t *testing.T) {
	in := pgInstance(t, quiet)
	tok := in.user("a@example.com")
	fresh := in.user("fresh@example.com")
	a, b := in.serve(), in.serve()
	both := []*daemon{a, b}
	if h := a.do("GET", "/healthz", "", "").expect(t, 200, ""); h.body["plugins"].(map[string]any)["storage"].(map[string]any)["plugin"] != "postgres" {
		t.Fatalf("healthz: %v", h.body)
	}

	// Identical submissions split across the two daemons: exactly one 201.
	got := concurrently(20, both, func(int) (string, string, string, string) {
		return "POST", base + "/submit-threat-report", tok, pkg("split-pkg")
	})
	if got[201] != 1 || got[409] != 19 {
		t.Fatalf("20 identical submissions over two daemons: %v", got)
	}
	// The new-user cap across both daemons.
	got = concurrently(10, both, func(i int) (string, string, string, string) {
		return "POST", base + "/submit-threat-report", fresh, pkg(fmt.Sprintf("fresh-%d", i))
	})
	if got[201] != 3 || got[403] != 7 {
		t.Fatalf("a new user's 10 submissions over two daemons: %v", got)
	}
	// A verification through the CLI shows on both daemons within the bound.
	out := in.mustCLI("review", "list")
	var id string
	for _, line := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 3 && f[3] == "split-pkg" {
			id = f[0]
		}
	}
	if id == "" {
		t.Fatalf("split-pkg not pending:\n%s", out)
	}
	in.mustCLI("review", "verify", id)
	for _, d := range both {
		eventually(t, "verification visible on every daemon", func() bool {
			return d.do("GET", checkPath("purl", "pkg:npm/split-pkg"), tok, "").body["malicious"] == true
		})
	}
}

func TestPostgresHourlyLimitAcrossDaemons(t *testing.T) {
	in := pgInstance(t, quiet+"  submissions_per_hour: 5\n  new_user_max_unverified: 0\n")
	tok := in.user("h@example.com")
	a, b := in.serve(), in.serve()
	got := concurrently(12, []*daemon{a, b}, func(i int) (string, string, string, string) {
		return "POST", base + "/submit-threat-report", tok, pkg(fmt.Sprintf("hourly-%d", i))
	})
	if got[201] != 5 || got[429] != 7 {
		t.Fatalf("12 submissions over two daemons under an hourly limit of 5: %v", got)
	}
}

// TestPostgresSharedRateLimits: with limits.store: storage, two daemons
// share one per-token budget; with memory each would allow the full limit.
func TestPostgresSharedRateLimits(t *testing.T) {
	in := pgInstance(t, "limits:\n  per_ip_per_minute: 0\n  per_token_per_minute: {free: 20, paid: 20}\n  store: storage\n  sync_interval: 20ms\n")
	tok := in.user("r@example.com")
	a, b := in.serve(), in.serve()
	// Stay clear of a minute boundary, where both windows would reset.
	if s := time.Now().Second(); s > 50 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	allowed := 0
	for i := range 40 {
		d := []*daemon{a, b}[i%2]
		if d.do("GET", base+"/account", tok, "").code == 200 {
			allowed++
		}
		time.Sleep(50 * time.Millisecond) // > 2 × sync_interval: each daemon has seen the other's count
	}
	if allowed != 20 {
		t.Fatalf("two daemons sharing a per-token limit of 20 allowed %d of 40 requests", allowed)
	}
}

// Every identifier validation accepts is storable on every backend: the
// longest URL accepted (2,048 bytes) is indexed by PostgreSQL as by SQLite,
// and a longer one is a 400 on both, never a 500 (issue 11: a random 3.9 KB
// URL was 201 on SQLite and 500 on PostgreSQL).
func TestLongestIdentifierIsStorableOnEveryBackend(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var in *instance
			if backend == "postgres" {
				in = pgInstance(t, quiet)
			} else {
				in = newInstance(t, quiet)
			}
			tok := in.user("long@example.com", "--tier", "paid")
			d := in.serve()
			// Random path characters defeat any compression of the index row.
			rnd := make([]byte, 4000)
			for i := range rnd {
				rnd[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[(i*7919+i*i*31)%36]
			}
			url := func(n int) string { p := "https://evil.example/"; return p + string(rnd[:n-len(p)]) }
			body := func(u string) string {
				return fmt.Sprintf(`{"report_type":"url","resource_identifier":%q,"threat_description":"x"}`, u)
			}
			d.do("POST", base+"/submit-threat-report", tok, body(url(2048))).expect(t, 201, "")
			r := d.do("POST", base+"/submit-threat-report", tok, body(url(2049))).expect(t, 400, "resource_identifier: is longer than 2048 bytes (2049)")
			if r.body["field"] != "resource_identifier" {
				t.Fatalf("field: %v", r.body)
			}
			d.do("POST", base+"/submit-threat-report", tok, body(url(3900))).expect(t, 400, "resource_identifier: is longer than 2048 bytes (3900)")
			// A 2 KB evidence URL and advisory URL are stored too.
			d.do("POST", base+"/submit-threat-report", tok, fmt.Sprintf(`{"report_type":"ip","resource_identifier":"192.0.2.7","threat_description":"x","evidence_references":%q,"osv_advisory_url":%q}`,
				url(2048), url(2048))).expect(t, 201, "")
			d.do("POST", base+"/submit-threat-report", tok, fmt.Sprintf(`{"report_type":"ip","resource_identifier":"192.0.2.8","threat_description":"x","osv_advisory_url":%q}`,
				url(2049))).expect(t, 400, "osv_advisory_url: is longer than 2048 bytes (2049)")
		})
	}
}
