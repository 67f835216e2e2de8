package main_test

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
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
	t.Parallel()
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
	t.Parallel()
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
// It runs alone: the limit holds as the daemons sync their counts within
// limits.sync_interval, a bound the other tests' load would stretch.
func TestPostgresSharedRateLimits(t *testing.T) {
	in := pgInstance(t, "limits:\n  per_ip_per_minute: 0\n  per_token_per_minute: {free: 20, paid: 20}\n  store: storage\n  sync_interval: 20ms\n")
	tok := in.user("r@example.com")
	a, b := in.serve(), in.serve()
	for attempt := 1; ; attempt++ {
		// Stay clear of a minute boundary, where both windows would reset;
		// a run slowed past it by a loaded machine is run again in the
		// next window (its budget is fresh).
		apitest.ClearOfWindowEdge(t, time.Minute, 20*time.Second)
		window := time.Now().Truncate(time.Minute)
		allowed := 0
		for i := range 40 {
			d := []*daemon{a, b}[i%2]
			if d.do("GET", base+"/account", tok, "").code == 200 {
				allowed++
			}
			time.Sleep(100 * time.Millisecond) // 5 × sync_interval: each daemon has seen the other's count
		}
		if !time.Now().Truncate(time.Minute).Equal(window) && attempt < 3 {
			t.Logf("attempt %d crossed a minute boundary (%d allowed); again from the start of the next window", attempt, allowed)
			time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + 100*time.Millisecond)))
			continue
		}
		if allowed != 20 {
			t.Fatalf("two daemons sharing a per-token limit of 20 allowed %d of 40 requests", allowed)
		}
		return
	}
}

// Every identifier validation accepts is storable on every backend: the
// longest URL accepted (2,048 bytes) is indexed by PostgreSQL as by SQLite,
// and a longer one is a 400 on both, never a 500 (issue 11: a random 3.9 KB
// URL was 201 on SQLite and 500 on PostgreSQL).
func TestLongestIdentifierIsStorableOnEveryBackend(t *testing.T) {
	t.Parallel()
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

// TestWebDecisionsAcrossDaemons: two daemons on one PostgreSQL database. A
// report verified in daemon A's web queue is malicious on A at once and on
// B within cache.freshness; a token revoked on A's Settings → API Tokens is
// refused by B within the same bound (docs/web.md).
func TestWebDecisionsAcrossDaemons(t *testing.T) {
	const fresh = 3 * time.Second
	in := pgInstance(t, quiet+fmt.Sprintf("cache:\n  freshness: %s\n", fresh))
	in.user("rita@example.com", "--role", "reviewer", "--name", "Rita")
	in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "rita@example.com")
	a, b := in.serve(), in.serve()

	// Sam signs up on A, makes a token there and submits through B.
	sam := in.browser(a)
	sam.get("/signup")
	sam.post("/signup", url.Values{"email": {"sam@example.com"}, "password": {"a long enough password"}}).expect(t, 200, "API Tokens")
	tok := tokenRE.FindString(sam.post("/settings/tokens", url.Values{"name": {"ci"}}).expect(t, 200, "Copy it now").body)
	r := b.until(201, "POST", base+"/submit-threat-report", tok, pkg("two-daemon-pkg"))
	id, _ := r.body["threat_id"].(string)
	check := checkPath("purl", "pkg:npm/two-daemon-pkg")
	for _, d := range []*daemon{a, b} {
		if v := d.do("GET", check, tok, "").expect(t, 200, ""); v.body["malicious"] != false {
			t.Fatalf("a pending report is malicious on %s: %v", d.base, v.body)
		}
	}

	// Rita verifies it in A's queue.
	rita := in.browser(a)
	rita.get("/login?next=/review")
	rita.post("/login", url.Values{"email": {"rita@example.com"}, "password": {"correct horse battery"}, "next": {"/review"}}).
		expect(t, 200, "Review queue", "two-daemon-pkg")
	rita.post("/review/threats/"+id, url.Values{"decision": {"verify"}, "version": {"1"}}).expect(t, 200, "Done: package two-daemon-pkg is verified.")
	decided := time.Now()
	if v := a.do("GET", check, tok, "").expect(t, 200, ""); v.body["malicious"] != true {
		t.Fatalf("right after the web decision, check-malicious on the same daemon: %v", v.body)
	}
	for b.do("GET", check, tok, "").body["malicious"] != true {
		if time.Since(decided) > fresh+time.Second {
			t.Fatalf("the other daemon did not see the web decision within cache.freshness (%s)", fresh)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the other daemon saw the decision after %s (cache.freshness %s)", time.Since(decided).Round(time.Millisecond), fresh)

	// A token revoked on A's web site: refused by A at once, by B within the bound.
	b.do("GET", base+"/account", tok, "").expect(t, 200, "")
	list := sam.get("/settings/tokens").expect(t, 200, "Revoke")
	m := regexp.MustCompile(`action="(/settings/tokens/[^"]+/revoke)"`).FindStringSubmatch(list.body)
	if m == nil {
		t.Fatalf("no Revoke form:\n%s", list.body)
	}
	sam.post(m[1], url.Values{"confirm": {"yes"}}).expect(t, 200, "is revoked.")
	revoked := time.Now()
	a.do("GET", base+"/account", tok, "").expect(t, 401, "")
	for b.do("GET", base+"/account", tok, "").code != 401 {
		if time.Since(revoked) > fresh+time.Second {
			t.Fatalf("the other daemon still accepts a token revoked on the web after cache.freshness (%s)", fresh)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
