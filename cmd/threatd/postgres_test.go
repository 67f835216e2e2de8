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
		if f := strings.Fields(line); len(f) > 2 && f[2] == "split-pkg" {
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
