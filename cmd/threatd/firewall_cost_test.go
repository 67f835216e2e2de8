package main_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// cpuSeconds is a live process's user and system CPU time so far.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command (which may hold spaces) in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// bigPackument is an npm package document of about size bytes: versions
// 1.0.0, 1.0.1, … each with a long description, as the largest real
// packuments are.
func bigPackument(name, tarballBase string, size int) []byte {
	var b strings.Builder
	b.Grow(size + 1<<20)
	fmt.Fprintf(&b, `{"name":%q,"dist-tags":{"latest":"1.0.0"},"versions":{`, name)
	pad := strings.Repeat("x", 2800)
	n := 0
	for ; b.Len() < size; n++ {
		if n > 0 {
			b.WriteByte(',')
		}
		v := fmt.Sprintf("1.0.%d", n)
		fmt.Fprintf(&b, `%q:{"name":%q,"version":%q,"description":%q,"dist":{"tarball":"%s/%s/-/%s-%s.tgz","shasum":"0000"}}`,
			v, name, v, pad, tarballBase, name, name, v)
	}
	b.WriteString(`},"time":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"1.0.%d":"2026-01-01T00:00:00.000Z"`, i)
	}
	b.WriteString("}}")
	return []byte(b.String())
}

// TestFirewallCosts: each cost the attack found unbounded is bounded, in
// the daemon's CPU seconds and memory, measured on the daemon process:
// a 60 MiB package document is rewritten once however many clients ask at
// once and served from a kept rendering after; npm audit, scans and their
// copies are charged by what they cost, scans before they are parsed; a
// trickling upstream meets a deadline; a refusal to a HEAD has no body; a
// MISP 404 does not echo a huge id.
func TestFirewallCosts(t *testing.T) {
	t.Parallel()
	u := fakeregistry.New(t)
	const docSize = 60 << 20
	u.Put("/big-a", "application/json", 300, bigPackument("big-a", u.Srv.URL, docSize))
	u.Put("/big-b", "application/json", 300, bigPackument("big-b", u.Srv.URL, docSize))
	// One whose newest version is held by the quarantine (its rendering
	// expires when the hold ends), and one the upstream lets no cache
	// keep, as repository managers often send them.
	held := bigPackument("big-held", u.Srv.URL, docSize)
	if i := bytes.LastIndex(held, []byte("2026-01-01T00:00:00.000Z")); i >= 0 {
		held = append(held[:i:i], append([]byte(time.Now().UTC().Format("2006-01-02T15:04:05.000Z")), held[i+len("2026-01-01T00:00:00.000Z"):]...)...)
	}
	u.Put("/big-held", "application/json", 300, held)
	u.Files["/big-nostore"] = fakeregistry.File{Body: bigPackument("big-nostore", u.Srv.URL, docSize), ContentType: "application/json",
		Header: map[string]string{"Cache-Control": "private, no-store"}}
	u.NPMPackage(t, "slow-doc", "1.0.0", "1.0.0")
	u.PyPIProject(t, "costly-py", "1.0.0", "1.0.1")
	trickle := make(chan struct{})
	t.Cleanup(func() { close(trickle) })
	slow := u.Srv.Config.Handler
	u.Srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slow-doc" && r.URL.Path != "/slow-doc/-/slow-doc-1.0.0.tgz" {
			slow.ServeHTTP(w, r)
			return
		}
		// A byte every 200 ms, for ever.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-trickle:
				return
			case <-r.Context().Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	in := newInstance(t, "limits:\n  per_ip_per_minute: 0\n  per_token_per_minute: {free: 60, paid: 2000}\n  new_user_max_unverified: 0\n"+fwConfig(u)+
		"  upstream_timeout: 20s\n  download_timeout: 20s\n")
	tok := in.user("costly@example.com")
	paid := in.user("paid-costly@example.com", "--tier", "paid")
	d := in.serve()
	pid := d.cmd.Process.Pid
	fw := base + "/firewall"
	evil := fwReport(t, in, d, tok, "npm", "big-a", "1.0.5")
	fwReport(t, in, d, tok, "pypi", "costly-py", "1.0.1")
	eventually(t, "the report in the index", func() bool {
		code, _, _ := d.fwGet(fw+"/npm/big-a/-/big-a-1.0.5.tgz", tok)
		return code == 403
	})

	t.Run("a huge package document is rewritten once", func(t *testing.T) {
		get := func(name string) int {
			req, _ := http.NewRequest("GET", d.base+fw+"/npm/"+name, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			client := in.httpsClient()
			client.Timeout = 3 * time.Minute
			res, err := client.Do(req)
			if err != nil {
				t.Errorf("GET %s: %v", name, err)
				return 0
			}
			defer res.Body.Close()
			var doc struct {
				Versions map[string]struct {
					Dist struct{ Tarball string }
				}
			}
			if res.StatusCode != 200 {
				b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
				t.Errorf("GET %s: %d %s", name, res.StatusCode, b)
				return 0
			}
			if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
				t.Errorf("GET %s: %v", name, err)
				return 0
			}
			if _, ok := doc.Versions["1.0.5"]; ok && name == "big-a" {
				t.Errorf("big-a's blocked 1.0.5 is in the document served (%s)", evil)
			}
			if v := doc.Versions["1.0.0"]; v.Dist.Tarball != d.base+fw+"/npm/"+name+"/-/"+name+"-1.0.0.tgz" {
				t.Errorf("%s 1.0.0's tarball %q does not point at the firewall", name, v.Dist.Tarball)
			}
			return len(doc.Versions)
		}
		// The renderings the daemon counts: exact, where CPU seconds on a
		// shared machine are not (they are logged for the record).
		renderings := func() float64 {
			return max(0, value(d.scrape(), "threatd_firewall_renderings_total", map[string]string{"registry": "npm"}))
		}
		r0 := renderings()
		c0 := cpuSeconds(t, pid)
		if n := get("big-a"); n < 1000 {
			t.Fatalf("big-a: %d versions", n)
		}
		one := cpuSeconds(t, pid) - c0
		r1 := renderings()
		// Four clients at once for another document of the same size.
		c1 := cpuSeconds(t, pid)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() { defer wg.Done(); get("big-b") }()
		}
		wg.Wait()
		four := cpuSeconds(t, pid) - c1
		r2 := renderings()
		// The first document four times more: from its kept rendering.
		c2 := cpuSeconds(t, pid)
		for range 4 {
			get("big-a")
		}
		kept := cpuSeconds(t, pid) - c2
		r3 := renderings()
		hwm := peakRSS(t, pid)
		t.Logf("a %d MiB package document: first request %.2f CPU-s; four at once for another %.2f CPU-s; four more of the first %.2f CPU-s; daemon peak RSS %d MiB",
			docSize>>20, one, four, kept, hwm>>20)
		if r1-r0 != 1 {
			t.Errorf("the first request of big-a made %v renderings, want 1", r1-r0)
		}
		if r2-r1 != 1 {
			t.Errorf("four clients at once made %v renderings of big-b (%.2f CPU-s against %.2f for one), want 1: the document was rewritten for each", r2-r1, four, one)
		}
		if r3-r2 != 0 {
			t.Errorf("four requests of big-a, already rewritten, made %v renderings (%.2f CPU-s against %.2f for the first), want 0: the rendering was not kept", r3-r2, kept, one)
		}
		if hwm > 600<<20 {
			t.Errorf("daemon peak RSS %d MiB while rewriting %d MiB documents", hwm>>20, docSize>>20)
		}
		// A document that holds a version back, and one no cache may
		// keep upstream: rendered once, then served from the rendering
		// (the second fetched whole again, not rewritten again).
		for _, name := range []string{"big-held", "big-nostore"} {
			r0 := renderings()
			c0 := cpuSeconds(t, pid)
			get(name)
			first := cpuSeconds(t, pid) - c0
			c1 := cpuSeconds(t, pid)
			for range 4 {
				get(name)
			}
			again := cpuSeconds(t, pid) - c1
			t.Logf("%s: first request %.2f CPU-s, four more %.2f CPU-s", name, first, again)
			if n := renderings() - r0; n != 1 {
				t.Errorf("%s: five requests made %v renderings, want 1", name, n)
			}
		}
	})

	t.Run("npm audit is charged per 1,000 versions", func(t *testing.T) {
		var b strings.Builder
		b.WriteByte('{')
		const names = 340001
		for i := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"n%d":["1.0.0"]`, i)
		}
		b.WriteByte('}')
		req, _ := http.NewRequest("POST", d.base+fw+"/npm/-/npm/v1/security/advisories/bulk", strings.NewReader(b.String()))
		req.Header.Set("Authorization", "Bearer "+paid)
		req.Header.Set("Content-Type", "application/json")
		client := in.httpsClient()
		client.Timeout = 2 * time.Minute
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		limit, _ := strconv.Atoi(res.Header.Get("RateLimit-Limit"))
		remaining, _ := strconv.Atoi(res.Header.Get("RateLimit-Remaining"))
		if res.StatusCode != 200 || limit-remaining != (names+999)/1000 {
			t.Fatalf("audit of %d names: %d, %d of %d left (want %d charged): %.200s", names, res.StatusCode, remaining, limit, (names+999)/1000, body)
		}
	})

	t.Run("scans are charged by their size before they are parsed, and by every entry", func(t *testing.T) {
		// 68,000 copies of one package: 680 requests, not one.
		var b strings.Builder
		b.WriteString(`{"name":"x","version":"1.0.0","lockfileVersion":3,"packages":{"":{"name":"x","version":"1.0.0"}`)
		for i := range 68000 {
			fmt.Fprintf(&b, `,"node_modules/a%d/node_modules/left-pad":{"version":"1.3.0"}`, i)
		}
		b.WriteString("}}")
		lock := []byte(b.String())
		code, hdr, body := d.postScan("?file=package-lock.json", paid, lock)
		limit, _ := strconv.Atoi(hdr.Get("RateLimit-Limit"))
		remaining, _ := strconv.Atoi(hdr.Get("RateLimit-Remaining"))
		if code != 200 || limit != 2000 || limit-remaining != 680 {
			t.Fatalf("a scan of 68,000 entries: %d, %d of %d left (want 680 charged): %.200s", code, remaining, limit, body)
		}
		// A free token with its minute spent: a 6 MiB lockfile is refused
		// before it is read, at the cost of a small request.
		for {
			code, _, _ := d.postScan("?file=requirements.txt", tok, []byte("left-pad==1.3.0\n"))
			if code == 429 {
				break
			}
		}
		for len(lock) < 6<<20 {
			lock = append(lock[:len(lock)-2], []byte(`,"node_modules/z`+strconv.Itoa(len(lock))+`":{"version":"1.0.0"}}}`)...)
		}
		c0 := cpuSeconds(t, pid)
		for range 5 {
			if code, _, body := d.postScan("?file=package-lock.json", tok, lock); code != 429 {
				t.Fatalf("a 6 MiB scan over the limit: %d %.200s", code, body)
			}
		}
		refused := cpuSeconds(t, pid) - c0
		c1 := cpuSeconds(t, pid)
		if code, _, body := d.postScan("?file=package-lock.json", paid, lock); code != 200 && code != 429 {
			t.Fatalf("the same lockfile, paid: %d %.200s", code, body)
		}
		parsed := cpuSeconds(t, pid) - c1
		t.Logf("a 6 MiB lockfile: 5 refused before parsing %.2f CPU-s; parsed once %.2f CPU-s", refused, parsed)
		if refused > parsed {
			t.Errorf("five refusals cost %.2f CPU-s, more than parsing the file once (%.2f): the file was parsed before the 429", refused, parsed)
		}
	})

	t.Run("a trickling upstream meets the deadline", func(t *testing.T) {
		start := time.Now()
		code, _, body := d.fwGet(fw+"/npm/slow-doc", tok)
		if code != 502 || !strings.Contains(string(body), "in time") {
			t.Fatalf("a document trickled a byte every 200 ms: %d %s", code, body)
		}
		if took := time.Since(start); took > time.Minute {
			t.Fatalf("the request took %s with firewall.upstream_timeout 20s", took)
		}
	})

	t.Run("a refusal to a HEAD has no body", func(t *testing.T) {
		pool := x509.NewCertPool()
		pem, _ := os.ReadFile(in.certFile())
		pool.AppendCertsFromPEM(pem)
		// The PyPI refusal is written by hand (its reason phrase carries
		// the message, for pip): the one that carried a body.
		for _, p := range []string{fw + "/pypi/simple/costly-py/costly_py-1.0.1-py3-none-any.whl", fw + "/npm/big-a/-/big-a-1.0.5.tgz",
			fw + "/pypi/simple/atk%3F/", fw + "/go/example.com/x/@v/v1.0.0%3F.zip"} {
			conn, err := tls.Dial("tcp", strings.TrimPrefix(d.base, "https://"), &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "HEAD %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", p, strings.TrimPrefix(d.base, "https://"), tok)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: "HEAD"})
			if err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(conn)
			conn.Close()
			if res.StatusCode < 400 || len(rest) != 0 {
				t.Errorf("HEAD %s: %d and %d bytes after the header: %q", p, res.StatusCode, len(rest), rest)
			}
		}
	})

	t.Run("a MISP 404 does not echo a huge id", func(t *testing.T) {
		id := strings.Repeat("a", 5000)
		r := d.do("GET", base+"/misp/"+id+".json", paid, "")
		if r.code != 404 || len(r.raw) > 400 || strings.Contains(r.raw, strings.Repeat("a", 100)) {
			t.Fatalf("MISP 404 for a 5,000-character id: %d, %d bytes: %.300s", r.code, len(r.raw), r.raw)
		}
	})
}
