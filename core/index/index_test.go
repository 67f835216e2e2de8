package index_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/storage"
	"github.com/threatd/threatd/storage/storagetest"
)

func newStore(t testing.TB) *storage.Store { return storagetest.OpenSQLite(t) }

// submitter is a user of a new store with a live token.
type submitter struct {
	st      *storage.Store
	acc     *core.Accounts
	reports *core.Reports
	secret  string
	p       core.Principal
}

func newSubmitter(t *testing.T, email string) submitter {
	ctx := context.Background()
	st := newStore(t)
	acc := core.NewAccounts(st)
	u, _ := acc.AddUser(ctx, core.NewUser{Email: email})
	secret, _, _ := acc.IssueToken(ctx, u.Email, "")
	p, err := acc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	return submitter{st: st, acc: acc, reports: core.NewReports(st, core.Limits{}), secret: secret, p: p}
}

// TestFollowerKeepsIndexCurrent drives a real SQLite store and checks that
// the follower applies verifications, withdrawals, revisions and token
// revocations to the index and the principal cache.
func TestFollowerKeepsIndexCurrent(t *testing.T) {
	ctx := context.Background()
	sb := newSubmitter(t, "f@example.com")
	st, acc, reports, secret, p := sb.st, sb.acc, sb.reports, sb.secret, sb.p

	sub := func(id, versions string) core.Threat {
		s := core.Submission{ReportType: ptr("package"), ResourceIdentifier: &id, Registry: ptr("npm"), ThreatDescription: ptr("x"), VersionInfo: &versions}
		if versions == "" {
			s.VersionInfo = nil
		}
		th, err := reports.Submit(ctx, p, s)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	a := sub("pkg-a", "1.0.0, 1.0.1")
	if _, err := reports.Decide(ctx, a.ID, 0, core.DecisionVerify, "", nil); err != nil {
		t.Fatal(err)
	}
	idx := index.New(st, 100)
	if err := idx.Load(ctx); err != nil {
		t.Fatal(err)
	}
	principals := index.NewPrincipals(acc, time.Second)
	f := &index.Follower{Store: st, Index: idx, Principals: principals, Log: slog.New(slog.DiscardHandler)}
	check := func(name, version string) index.Result {
		r, err := idx.CheckQuery(ctx, core.CheckQuery{ReportType: core.TypePackage, ResourceIdentifier: name, Ecosystem: "npm", Version: version})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := check("PKG-A", ""); r.Count != 1 || r.Latest.ID != a.ID {
		t.Fatalf("loaded: %+v", r)
	}
	if check("pkg-a", "1.0.1").Count != 1 || check("pkg-a", "2.0").Count != 0 {
		t.Fatal("version matching")
	}
	b := sub("pkg-b", "")
	if check("pkg-b", "").Count != 0 {
		t.Fatal("pending report indexed")
	}
	reports.Decide(ctx, b.ID, 0, core.DecisionVerify, "", nil)
	reports.Decide(ctx, a.ID, 0, core.DecisionReject, "withdrawn", nil)
	if err := f.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	if check("pkg-b", "9.9.9").Count != 1 || check("pkg-a", "").Count != 0 {
		t.Fatal("follower did not apply verification and withdrawal")
	}
	// An approved revision reaches the cached record.
	if r := check("pkg-b", ""); r.Latest.Details.Publisher != "" {
		t.Fatal("unexpected publisher")
	}
	_, rev, err := reports.Modify(ctx, p, b.ID, core.Patch{Submission: core.Submission{Publisher: ptr("mallory")}})
	if err != nil || rev.State != core.RevisionPending {
		t.Fatalf("modify: %+v %v", rev, err)
	}
	if _, _, err := reports.DecideRevision(ctx, rev.ID, true, "", nil); err != nil {
		t.Fatal(err)
	}
	f.Catch(ctx)
	if r := check("pkg-b", ""); r.Latest.Details.Publisher != "mallory" {
		t.Fatalf("record after approved revision: %+v", r.Latest.Details)
	}
	// Revocation reaches the principal cache.
	if _, err := principals.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	acc.RevokeToken(ctx, secret)
	if _, err := principals.Authenticate(ctx, secret); err != nil {
		t.Fatal("the cache must serve until the feed says otherwise")
	}
	f.Catch(ctx)
	if _, err := principals.Authenticate(ctx, secret); err == nil {
		t.Fatal("revoked token still accepted after the feed was applied")
	}
}

func ptr(s string) *string { return &s }

// summaryStore serves GetThreat(s) for the benchmarks' record misses; the index
// itself is built with Put, as Load would.
type summaryStore struct{ core.Store }

func (summaryStore) GetThreat(_ context.Context, id string) (core.Threat, error) {
	return core.Threat{ID: id, Status: core.StatusVerified, ReportType: core.TypePackage, Registry: "npm",
		Details: core.Details{ThreatDescription: "benchmark"}}, nil
}

// GetThreats is how the index's record look-ups read storage (fetch.go).
func (st summaryStore) GetThreats(ctx context.Context, ids []string) ([]core.Threat, error) {
	out := make([]core.Threat, len(ids))
	for i, id := range ids {
		out[i], _ = st.GetThreat(ctx, id)
	}
	return out, nil
}

func buildIndex(b *testing.B, n int) (*index.Index, float64) {
	b.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	idx := index.New(summaryStore{}, 50_000)
	at := time.Now()
	for i := range n {
		err := idx.Put(core.Summary{ID: uuid.NewString(), CanonicalKey: fmt.Sprintf("package:npm:malicious-package-%07d", i),
			ReportType: core.TypePackage, Registry: "npm", VerifiedAt: at, VersionInfo: "1.0.0, 1.0.1"})
		if err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The heap's growth and the table outside it (offheap.go).
	return idx, float64(int64(after.HeapAlloc-before.HeapAlloc)+idx.TableBytes()) / float64(n)
}

// BenchmarkCheck measures the check path (normalise, look up, fetch the
// record) with 100,000 and 1,000,000 verified reports: misses (the common
// case, a clean dependency) and hits on reports whose records are cached.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		idx, perReport := buildIndex(b, n)
		ctx := context.Background()
		run := func(name string, ident func(i int) string, wantHit bool) {
			b.Run(fmt.Sprintf("%s/%dk", name, n/1000), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					q := core.CheckQuery{ReportType: core.TypePackage, ResourceIdentifier: ident(i), Ecosystem: "npm", Version: "1.0.1"}
					r, err := idx.CheckQuery(ctx, q)
					if err != nil || (r.Count > 0) != wantHit {
						b.Fatalf("%s: %+v %v", q.ResourceIdentifier, r, err)
					}
					i++
				}
				b.ReportMetric(perReport, "B/report")
			})
		}
		run("miss", func(i int) string { return fmt.Sprintf("clean-package-%d", i%1000) }, false)
		run("hit", func(i int) string { return fmt.Sprintf("Malicious-Package-%07d", (i*7919)%1000) }, true)
	}
}

// While the index loads (the daemon already serves), token revocations by
// another process still reach the principal cache; threat changes wait for
// the index and are applied from the position it was loaded at.
func TestFollowerBeforeIndexLoaded(t *testing.T) {
	ctx := context.Background()
	sb := newSubmitter(t, "early@example.com")
	st, acc, reports, secret, p := sb.st, sb.acc, sb.reports, sb.secret, sb.p

	idx := index.New(st, 100) // not loaded
	principals := index.NewPrincipals(acc, time.Second)
	f := &index.Follower{Store: st, Index: idx, Principals: principals, Log: slog.New(slog.DiscardHandler)}
	if err := f.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := principals.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	id := "pkg-early"
	th, err := reports.Submit(ctx, p, core.Submission{ReportType: ptr("package"), ResourceIdentifier: &id, Registry: ptr("npm"), ThreatDescription: ptr("x")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reports.Decide(ctx, th.ID, 0, core.DecisionVerify, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := acc.RevokeToken(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if err := f.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := principals.Authenticate(ctx, secret); err == nil {
		t.Fatal("a token revoked while the index loads is still accepted")
	}
	if idx.Len() != 0 || idx.LastSeq() != 0 {
		t.Fatalf("threat changes applied to an index that is not loaded: %d reports, seq %d", idx.Len(), idx.LastSeq())
	}
	if err := idx.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := idx.CheckQuery(ctx, core.CheckQuery{ReportType: core.TypePackage, ResourceIdentifier: id, Ecosystem: "npm"}); err != nil || r.Count != 1 {
		t.Fatalf("after load: %+v %v", r, err)
	}
}

// TestVersionsAsTheRegistryCompares: a check matches a report's versions
// as the registry's own client compares them (core/versioning), for lists
// kept in the index and for long lists read from the record; a check
// without an ecosystem compares each registry's way.
func TestVersionsAsTheRegistryCompares(t *testing.T) {
	ctx := context.Background()
	sb := newSubmitter(t, "v@example.com")
	long := "9.0.0"
	for i := range 40 {
		long += fmt.Sprintf(", 9.%d.1", i+1)
	}
	for _, r := range []struct{ registry, name, versions string }{
		{"npm", "ver-npm", "v1.0.1, 2.0.0-rc.1"},
		{"pypi", "ver-py", "1.0.1, 1.0.0rc1, 2.0"},
		{"go", "example.com/ver", "2.0.0, v3.1.0"},
		{"pypi", "ver-long", long + ", 1.0.1"},
	} {
		th, err := sb.reports.Submit(ctx, sb.p, core.Submission{ReportType: ptr("package"), ResourceIdentifier: ptr(r.name), Registry: ptr(r.registry),
			ThreatDescription: ptr("x"), VersionInfo: ptr(r.versions)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sb.reports.Decide(ctx, th.ID, 0, core.DecisionVerify, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	idx := index.New(sb.st, 100)
	if err := idx.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		registry, name, version string
		hit                     bool
	}{
		{"npm", "ver-npm", "1.0.1", true},
		{"npm", "ver-npm", "=1.0.1", true},
		{"npm", "ver-npm", "2.0.0-rc.1", true},
		{"npm", "ver-npm", "1.0.10", false},
		{"pypi", "ver-py", "1.0.01", true},
		{"pypi", "ver-py", "1.0.1.0", true},
		{"pypi", "ver-py", "v1.0.1", true},
		{"pypi", "ver-py", "1.0.1+local", true},
		{"pypi", "ver-py", "1.0.0RC1", true},
		{"pypi", "ver-py", "1.0.0-rc1", true},
		{"pypi", "ver-py", "1.0.0c1", true},
		{"pypi", "ver-py", "2", true},
		{"pypi", "ver-py", "1.0.1.post1", false},
		{"go", "example.com/ver", "v2.0.0+incompatible", true},
		{"go", "example.com/ver", "3.1.0", true},
		{"go", "example.com/ver", "v2.0.1", false},
		{"pypi", "ver-long", "1.0.1.0", true},
		{"pypi", "ver-long", "9.40.1", true},
		{"pypi", "ver-long", "9.41.1", false},
		{"", "ver-py", "1.0.1.0", true},   // every registry: PyPI's rule for the PyPI report
		{"", "ver-npm", "v1.0.1", true},   // npm's for the npm one
		{"", "ver-npm", "1.0.1.0", false}, // not an npm spelling of 1.0.1
	} {
		r, err := idx.CheckQuery(ctx, core.CheckQuery{ReportType: core.TypePackage, ResourceIdentifier: c.name, Ecosystem: c.registry, Version: c.version})
		if err != nil {
			t.Fatal(err)
		}
		if (r.Count == 1) != c.hit {
			t.Errorf("%s %s@%s: %d reports, want a hit: %v", c.registry, c.name, c.version, r.Count, c.hit)
		}
	}
	// Submit refuses what the registry could never install.
	for reg, bad := range map[string][2]string{"npm": {"ver-bad", "1.0"}, "go": {"example.com/ver-bad", "master"}, "pypi": {"ver-bad", "1.0-foo-bar"}} {
		_, err := sb.reports.Submit(ctx, sb.p, core.Submission{ReportType: ptr("package"), ResourceIdentifier: ptr(bad[0]), Registry: ptr(reg),
			ThreatDescription: ptr("x"), VersionInfo: ptr("1.0.0, " + bad[1])})
		if fe, ok := err.(*core.FieldError); !ok || fe.Field != "version_info" {
			t.Errorf("%s version %q: %v, want a version_info error", reg, bad, err)
		}
	}
}
