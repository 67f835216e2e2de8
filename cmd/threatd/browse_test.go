package main_test

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writeOSV writes n OSV records of ecosystem eco (names prefix-000…) into
// dir, published a minute apart from at; extra is more members of each
// record (`"database_specific":…`), or "".
func writeOSV(t *testing.T, dir, eco, prefix string, n int, at time.Time, extra string) {
	t.Helper()
	for i := range n {
		when := at.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)
		rec := fmt.Sprintf(`{"schema_version":"1.5.0","id":"MAL-%s-%03d","published":%q,"modified":%q,"summary":"Malicious code in %s-%03d",
"details":"Steals tokens.","affected":[{"package":{"ecosystem":%q,"name":"%s-%03d"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}]}]%s}`,
			prefix, i, when, when, prefix, i, eco, prefix, i, extra)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("MAL-%s-%03d.json", prefix, i)), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var browseCount = regexp.MustCompile(`<p class="count" role="status">([\d,]+) verified threats?[.;]`)

// browseTotal returns the total a /threats page states.
func browseTotal(t *testing.T, p page) int {
	t.Helper()
	p.expect(t, 200)
	m := browseCount.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("%s: no total on the page:\n%s", p.url, p.body)
	}
	n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	return n
}

// TestWebSearchIndicatorTotal: the search for an indicator says how many
// verified reports name it, all of them, when more than the 20 listed do,
// and when fewer do; the name-prefix list says when it is cut.
func TestWebSearchIndicatorTotal(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	dir := t.TempDir()
	at := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	writeOSV(t, dir, "npm", "many-c2", 25, at, `,"database_specific":{"iocs":{"domains":["shared-c2.example"]}}`)
	writeOSV(t, dir, "PyPI", "few-c2", 3, at, `,"database_specific":{"iocs":{"domains":["few-c2.example"]}}`)
	in.mustCLI("import", "osv", dir)
	d := in.serve()
	b := in.browser(d)
	p := b.get("/?q=shared-c2.example").expect(t, 200, "25 verified reports name it as an indicator of compromise; the 20 most recent are listed.")
	if n := strings.Count(p.body, `href="/threats/`); n < 20 {
		t.Fatalf("%d reports linked, want the 20 most recent", n)
	}
	b.get("/?q=few-c2.example").expect(t, 200, "3 verified reports name it as an indicator of compromise.")
	// The prefix "many-c2-0" names 25 npm packages (and none in the other
	// registries): the first 20 in name order, and a word that there are more.
	p = b.get("/?q=many-c2-0").expect(t, 200, "type more of the name")
	_, list, _ := strings.Cut(p.body, "Packages whose names start with")
	list, _, _ = strings.Cut(list, "type more of the name")
	if !strings.Contains(list, ">many-c2-000<") || !strings.Contains(list, ">many-c2-019<") || strings.Contains(list, "many-c2-020") {
		t.Fatalf("the prefix list is not the first 20 names:\n%s", list)
	}
	b.get("/?q=few-c2-0").expect(t, 200, "few-c2-000", "few-c2-002").lacks(t, "type more of the name")
}

// TestWebBrowseTotals: the totals /threats shows for each type and
// ecosystem (kept by the daemon's index, not counted by the storage) and
// for filters beyond them (counted by the storage) match the reports, and
// follow a report verified and one withdrawn while the daemon runs.
func TestWebBrowseTotals(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	dir := t.TempDir()
	at := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	writeOSV(t, dir, "npm", "tot-npm", 12, at, "")
	writeOSV(t, dir, "PyPI", "tot-pypi", 7, at.Add(24*time.Hour), "")
	in.mustCLI("import", "osv", dir)
	tok := in.user("sam@example.com")
	d := in.serve()
	b := in.browser(d)
	npmLater := d.submit(tok, `{"report_type":"package","resource_identifier":"tot-npm-submitted","registry":"npm","threat_description":"Steals tokens","severity_level":"high"}`)
	urlID := d.submit(tok, `{"report_type":"url","resource_identifier":"https://tot.example/drop","threat_description":"Serves a stealer"}`)
	image := d.submit(tok, `{"report_type":"container","resource_identifier":"ghcr.io/tot/miner:1.0","threat_description":"Mines coins"}`)
	for _, id := range []string{npmLater, urlID, image} {
		in.mustCLI("review", "verify", id)
	}
	totals := map[string]int{
		"/threats":                               22,
		"/threats?ecosystem=npm":                 13,
		"/threats?ecosystem=pypi":                7,
		"/threats?type=package":                  20,
		"/threats?type=package&ecosystem=npm":    13,
		"/threats?type=url":                      1,
		"/threats?type=container":                1,
		"/threats?ecosystem=ghcr":                1,
		"/threats?type=container&ecosystem=ghcr": 1,
		"/threats?type=url&ecosystem=npm":        0,
		"/threats?ecosystem=rubygems":            0,
		// Beyond type and ecosystem: the storage counts.
		"/threats?ecosystem=npm&severity=high":    1,
		"/threats?ecosystem=npm&to=2000-01-01":    0,
		"/threats?ecosystem=pypi&from=2000-01-01": 7,
	}
	for path, want := range totals {
		eventually(t, fmt.Sprintf("%s: %d", path, want), func() bool { return browseTotal(t, b.get(path)) == want })
	}
	// Withdrawn while the daemon runs: every total by ecosystem and type
	// follows (the count moves, and no stale total is kept).
	in.mustCLI("review", "reject", npmLater, "--note", "a false positive")
	in.mustCLI("review", "reject", urlID, "--note", "a false positive")
	for path, want := range map[string]int{
		"/threats":                             20,
		"/threats?ecosystem=npm":               12,
		"/threats?type=package":                19,
		"/threats?type=url":                    0,
		"/threats?ecosystem=npm&severity=high": 0,
		"/threats?ecosystem=ghcr":              1,
	} {
		eventually(t, fmt.Sprintf("after the withdrawals, %s: %d", path, want), func() bool { return browseTotal(t, b.get(path)) == want })
	}
}

// TestWebBrowsePaging: /threats pages forward with Next page and back with
// Previous page over 120 reports: every report once, the same pages both
// ways, no Previous or First on the first page and no Next on the last.
func TestWebBrowsePaging(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	dir := t.TempDir()
	for i := range 120 {
		at := time.Date(2025, 1, 1, 0, i, 0, 0, time.UTC).Format(time.RFC3339)
		rec := fmt.Sprintf(`{"schema_version":"1.5.0","id":"MAL-PAGE-%03d","published":%q,"modified":%q,"summary":"Malicious code in page-pkg-%03d (npm)",
"details":"Steals tokens.","affected":[{"package":{"ecosystem":"npm","name":"page-pkg-%03d"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}]}]}`, i, at, at, i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("MAL-PAGE-%03d.json", i)), []byte(rec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in.mustCLI("import", "osv", dir)
	d := in.serve()
	b := in.browser(d)
	names := regexp.MustCompile(`>page-pkg-(\d{3})</a>`)
	link := func(p page, rel string) string {
		m := regexp.MustCompile(`href="(/threats\?[^"]+)" rel="` + rel + `"`).FindStringSubmatch(p.body)
		if m == nil {
			return ""
		}
		return html.UnescapeString(m[1])
	}
	onPage := func(p page) []string {
		var out []string
		for _, m := range names.FindAllStringSubmatch(p.body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	var pages [][]string
	p := b.get("/threats").expect(t, 200, "120 verified threats", "Next page")
	p.lacks(t, "Previous page", "First page")
	for {
		pages = append(pages, onPage(p))
		next := link(p, "next")
		if next == "" {
			break
		}
		p = b.get(next).expect(t, 200, "Previous page", "First page")
	}
	if len(pages) != 3 || len(pages[0]) != 50 || len(pages[1]) != 50 || len(pages[2]) != 20 || pages[0][0] != "119" || pages[2][19] != "000" {
		t.Fatalf("pages forward: %v", pages)
	}
	seen := map[string]bool{}
	for _, pg := range pages {
		for _, n := range pg {
			if seen[n] {
				t.Fatalf("report %s on two pages", n)
			}
			seen[n] = true
		}
	}
	for i := len(pages) - 2; i >= 0; i-- {
		prev := link(p, "prev")
		if prev == "" {
			t.Fatalf("no Previous page link on page %d:\n%s", i+2, p.body)
		}
		p = b.get(prev).expect(t, 200, "Next page")
		if got := onPage(p); !slices.Equal(got, pages[i]) {
			t.Fatalf("page %d backward: %v, forward: %v", i+1, got, pages[i])
		}
	}
	p.lacks(t, "Previous page", "First page")
	b.get("/threats?after=1.00000000-0000-7000-8000-000000000000&before=1.00000000-0000-7000-8000-000000000000").expect(t, 400, "cannot be given with after")
	b.get("/threats?before=junk").expect(t, 400, "before: is not a page of this list")
}
