package api

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/feed"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/cache"
	"github.com/threatd/threatd/core/firewall/proxy"
	"github.com/threatd/threatd/core/firewall/registries"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/ratelimit"
	"github.com/threatd/threatd/storage/storagetest"
)

// blockedMark is in every byte sequence of a blocked version the fuzz
// upstream serves (tarballs, wheels, module files, and the blocked
// version's entry in documents); a 200 answer of the firewall that holds
// it has served a blocked version.
const blockedMark = "BLOCKED-VERSION-BYTES"

// fwFixture is the firewall in process, with a real SQLite store and index
// holding verified reports of fz-evil@1.0.1 (npm, PyPI) and
// example.com/fzevil@v1.0.1 (Go), in front of a normalising upstream: it
// decodes the path, cleans it (%2e%2e, %2f, \ and ;params resolved, as
// static servers and Java servers do) and serves what that names.
type fwFixture struct {
	h     http.Handler
	token string
	up    *httptest.Server
}

// normalisingUpstream serves files by their cleaned, decoded path.
func normalisingUpstream(files map[string][]byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.ReplaceAll(r.URL.Path, "\\", "/")
		var segs []string
		for _, s := range strings.Split(p, "/") {
			s, _, _ = strings.Cut(s, ";")
			segs = append(segs, s)
		}
		p = path.Clean("/" + strings.Join(segs, "/"))
		b, ok := files[p]
		if !ok {
			b, ok = files[p+"/"]
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(b)
	})
}

func fwUpstreamFiles(base string) map[string][]byte {
	files := map[string][]byte{}
	mark := func(name, v string) string {
		if strings.Contains(name, "evil") && strings.TrimPrefix(v, "v") == "1.0.1" {
			return blockedMark
		}
		return "clean"
	}
	for _, name := range []string{"fz-evil", "fz-good"} {
		versions := map[string]any{}
		for _, v := range []string{"1.0.0", "1.0.1"} {
			tarball := fmt.Sprintf("/%s/-/%s-%s.tgz", name, name, v)
			files[tarball] = []byte("tarball " + name + "@" + v + " " + mark(name, v))
			entry := map[string]any{"name": name, "version": v, "description": mark(name, v), "dist": map[string]any{"tarball": base + tarball}}
			versions[v] = entry
			vdoc, _ := json.Marshal(entry)
			files["/"+name+"/"+v] = vdoc
		}
		doc, _ := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": "1.0.1"}, "versions": versions})
		files["/"+name] = doc
		var page strings.Builder
		for _, v := range []string{"1.0.0", "1.0.1"} {
			whl := fmt.Sprintf("%s-%s-py3-none-any.whl", strings.ReplaceAll(name, "-", "_"), v)
			files["/files/"+whl] = []byte("wheel " + v + " " + mark(name, v))
			fmt.Fprintf(&page, "<a href=\"../../files/%s\">%s</a>\n", whl, whl)
		}
		files["/simple/"+name+"/"] = []byte(page.String())
	}
	for _, mod := range []string{"example.com/fzevil", "example.com/fzgood"} {
		files["/"+mod+"/@v/list"] = []byte("v1.0.0\nv1.0.1\n")
		if strings.Contains(mod, "good") {
			files["/"+mod+"/@v/list"] = []byte("v1.0.0\nv1.0.1\nv1.0.2\n")
		}
		for _, v := range []string{"v1.0.0", "v1.0.1"} {
			m := mark(mod, v)
			files["/"+mod+"/@v/"+v+".info"] = []byte(fmt.Sprintf(`{"Version":%q,"Time":"2026-01-01T00:00:00Z","Mark":%q}`, v, m))
			files["/"+mod+"/@v/"+v+".mod"] = []byte("module " + mod + "\n// " + m + "\n")
			var zb bytes.Buffer
			zw := zip.NewWriter(&zb)
			fw, _ := zw.Create(mod + "@" + v + "/go.mod")
			_, _ = fw.Write([]byte("module " + mod + "\n// " + m + "\n"))
			_ = zw.Close()
			files["/"+mod+"/@v/"+v+".zip"] = append(zb.Bytes(), []byte(m)...)
		}
		files["/"+mod+"/@latest"] = []byte(`{"Version":"v1.0.1","Mark":"` + mark(mod, "v1.0.1") + `"}`)
	}
	// A sumdb tree beside the modules: a traversal from it reaches them.
	files["/sumdb/sum.golang.org/supported"] = []byte("")
	return files
}

func newFirewallFixture(t testing.TB) *fwFixture {
	t.Helper()
	f, err := buildFirewallFixture(t)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func buildFirewallFixture(t testing.TB) (*fwFixture, error) {
	dir := t.TempDir()
	st := storagetest.OpenSQLite(t)
	ctx := context.Background()
	acc := core.NewAccounts(st)
	reporter := storagetest.NewReporter(t, st, "fw@example.com")
	for _, r := range [][3]string{{"npm", "fz-evil", "1.0.1"}, {"pypi", "fz-evil", "1.0.1"}, {"go", "example.com/fzevil", "1.0.1"}} {
		reporter.Verified(t, r[0], r[1], r[2])
	}
	secret := reporter.Token
	f := &fwFixture{token: secret}
	var files map[string][]byte
	f.up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		normalisingUpstream(files).ServeHTTP(w, r)
	}))
	t.Cleanup(f.up.Close)
	files = fwUpstreamFiles(f.up.URL)
	srv := &Server{
		opts: Options{BasePath: "/functions/v1", MaxBodyBytes: 1 << 20, LatestCount: 100,
			PerTokenPerMinute: map[core.Tier]int{core.TierFree: 0, core.TierPaid: 0}},
		log: slog.New(slog.DiscardHandler), accounts: acc, store: st,
		index: index.New(st, 100), principals: index.NewPrincipals(acc, time.Second), usage: feed.NewUsage(st),
		paid:      feed.New(st, feed.Limits{MaxWindow: time.Hour, PageMax: 10}),
		ipLimiter: ratelimit.New(time.Minute), tokenLimiter: ratelimit.New(time.Minute), started: time.Now(),
	}
	srv.latest = index.NewLatest(srv.index, st)
	policy, err := firewall.NewPolicy(srv.index, nil, registries.Names())
	if err != nil {
		return nil, err
	}
	client, err := cache.NewClient([]cache.Origin{{URL: f.up.URL}}, false)
	if err != nil {
		return nil, err
	}
	upstreamCache, err := cache.Open(filepath.Join(dir, "cache"), 64<<20, client)
	if err != nil {
		return nil, err
	}
	srv.opts.Firewall = &proxy.Options{Adapters: registries.All(), Policy: policy, Cache: upstreamCache, UpstreamTimeout: 5 * time.Second, DownloadTimeout: 5 * time.Second,
		Upstreams: map[string]proxy.Upstream{core.RegistryNPM: {URL: f.up.URL}, core.RegistryPyPI: {URL: f.up.URL + "/simple"}, core.RegistryGo: {URL: f.up.URL}}}
	if err := srv.index.Load(ctx); err != nil {
		return nil, err
	}
	f.h = srv.echo()
	return f, nil
}

// get asks the firewall for raw (the path below {base}/firewall/, as a
// client writes it, escapes kept); ok is false when no client could send it.
func (f *fwFixture) get(raw string) (int, []byte, bool) {
	req, err := http.NewRequest(http.MethodGet, "http://fw.test/functions/v1/firewall/"+raw, nil)
	if err != nil {
		return 0, nil, false
	}
	req.RemoteAddr = "192.0.2.10:5555"
	req.Header.Set("Authorization", "Bearer "+f.token)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, b, true
}

// servesBlocked says whether an answer holds a blocked version's bytes:
// the mark, or fzevil's version list with the blocked version.
func servesBlocked(code int, body []byte) bool {
	if code != http.StatusOK {
		return false
	}
	return bytes.Contains(body, []byte(blockedMark)) || string(body) == "v1.0.0\nv1.0.1\n"
}

// firewallSeeds are paths that reached blocked bytes before the firewall
// judged what the upstream resolves, and the ordinary paths of each
// registry.
var firewallSeeds = []string{
	"npm/fz-evil", "npm/fz-evil/1.0.0", "npm/fz-evil/-/fz-evil-1.0.0.tgz", "npm/fz-evil/-/fz-evil-1.0.1.tgz",
	"npm/-/..%2ffz-evil%2f-%2ffz-evil-1.0.1.tgz", "npm/-/%2e%2e/fz-evil/-/fz-evil-1.0.1.tgz", "npm/-/..;/fz-evil/-/fz-evil-1.0.1.tgz",
	"npm/-/%5c..%5cfz-evil%5c-%5cfz-evil-1.0.1.tgz", "npm/fz-good/%2e%2e", "npm/fz-good/..%2ffz-evil%2f1.0.1", "npm/%2e%2e/fz-evil/1.0.1",
	"npm/fz-good/-/..%2f..%2ffz-evil%2f-%2ffz-evil-1.0.1.tgz", "npm/fz-evil/v1.0.1", "npm/fz-evil/=1.0.1", "npm/FZ-EVIL/1.0.1",
	"pypi/simple/fz-evil/", "pypi/simple/fz-evil/fz_evil-1.0.1-py3-none-any.whl", "pypi/simple/fz-evil%3F/fz_evil-1.0.1-py3-none-any.whl",
	"pypi/simple/fz-evil%23/fz_evil-1.0.1-py3-none-any.whl", "pypi/simple/fz-evil%3F/", "pypi/simple/fz-good/..%2f..%2ffiles%2ffz_evil-1.0.1-py3-none-any.whl",
	"pypi/simple/%2e%2e/files/fz_evil-1.0.1-py3-none-any.whl", "pypi/simple/FZ_Evil/fz_evil-1.0.1-py3-none-any.whl",
	"go/example.com/fzevil/@v/list", "go/example.com/fzevil/@v/v1.0.1.zip", "go/example.com/fzevil/@latest",
	"go/sumdb/..%2fexample.com%2ffzevil%2f@v%2fv1.0.1.zip", "go/sumdb/%2e%2e/example.com/fzevil/@v/v1.0.1.zip",
	"go/sumdb/%2e%2e/example.com/fzevil/@v/list", "go/example.com/fzgood/@v/..%2f..%2ffzevil%2f@v%2fv1.0.1.zip",
	"go/example.com/fzgood/@v/%2e%2e/%2e%2e/fzevil/@v/v1.0.1.zip", "go/example.com/fzevil/@v/v1.0.1+incompatible.zip",
	"go/example.com/fzevil/@v/v1.0.01.zip", "go/example.com/fzgood/@v/v1.0.0.zip%3f",
}

// TestFirewallNeverServesBlockedBytes: every seed, the attacks first found
// among them, is answered without a blocked version's bytes, and the
// ordinary requests for clean versions are served.
func TestFirewallNeverServesBlockedBytes(t *testing.T) {
	f := newFirewallFixture(t)
	for _, s := range firewallSeeds {
		code, body, ok := f.get(s)
		if !ok {
			t.Fatalf("%s: not a request", s)
		}
		if servesBlocked(code, body) {
			t.Errorf("%s: %d served a blocked version's bytes: %.200q", s, code, body)
		}
	}
	for _, s := range []string{"npm/fz-evil", "npm/fz-evil/-/fz-evil-1.0.0.tgz", "pypi/simple/fz-evil/fz_evil-1.0.0-py3-none-any.whl",
		"go/example.com/fzevil/@v/list", "go/example.com/fzevil/@v/v1.0.0.zip", "go/example.com/fzevil/@latest"} {
		if code, body, _ := f.get(s); code != 200 {
			t.Errorf("%s: %d %.200s, want the clean version served", s, code, body)
		}
	}
	for s, want := range map[string]int{"npm/-/%2e%2e/fz-evil/-/fz-evil-1.0.1.tgz": 400, "pypi/simple/fz-evil%3F/": 400,
		"go/sumdb/%2e%2e/example.com/fzevil/@v/v1.0.1.zip": 400, "go/example.com/fzevil/@v/v1.0.1.zip": 403, "npm/fz-evil/v1.0.1": 403} {
		if code, body, _ := f.get(s); code != want {
			t.Errorf("%s: %d %.200q, want %d", s, code, body, want)
		}
	}
}

// FuzzFirewallPaths: whatever path a client sends to any of the three
// registries, the firewall never answers 200 with a blocked version's
// bytes, against an upstream that resolves paths as static and Java
// servers do.
func FuzzFirewallPaths(f *testing.F) {
	for _, s := range firewallSeeds {
		f.Add(s)
	}
	fx := newFirewallFixture(f)
	f.Fuzz(func(t *testing.T, p string) {
		code, body, ok := fx.get(p)
		if ok && servesBlocked(code, body) {
			t.Fatalf("%q: %d served a blocked version's bytes: %.300q", p, code, body)
		}
	})
}
