package main_test

import (
	"net/url"
	"testing"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

func feedPage(t *testing.T, d *daemon, token, query string) response {
	t.Helper()
	return d.do("GET", base+"/threat-feed?"+query, token, "").expect(t, 200, "")
}

// TestThreatFeedHonoursItsLimit: a page as large as feed_page_max (1,000)
// holds every report of the window. With more than 100 reports in the
// window, limit=1000 answered count 100 and next_cursor null: storage
// replaced the 1,001 rows the page asked for with 100. Paging by 7 gives
// the same reports; a limit above feed_page_max is 400.
func TestThreatFeedHonoursItsLimit(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("tip@example.com", "--tier", "paid")
	in.mustCLI("import", "osv", testbin.OSVSample(t))
	d := in.serve()
	r := feedPage(t, d, tok, "hours=1&limit=1000")
	all := r.body["threats"].([]any)
	if n := int(r.body["count"].(float64)); n != len(all) || n <= 200 || r.body["next_cursor"] != nil {
		t.Fatalf("limit=1000: count %v, %d records, next_cursor %v; want every imported report (over 200) and no cursor", r.body["count"], len(all), r.body["next_cursor"])
	}
	var paged []any
	for q := "hours=1&limit=7"; ; {
		p := feedPage(t, d, tok, q)
		paged = append(paged, p.body["threats"].([]any)...)
		cur, _ := p.body["next_cursor"].(string)
		if cur == "" {
			break
		}
		q = "hours=1&limit=7&cursor=" + url.QueryEscape(cur)
	}
	if len(paged) != len(all) {
		t.Fatalf("pages of 7: %d reports, one page of 1,000: %d", len(paged), len(all))
	}
	for i := range all {
		if all[i].(map[string]any)["id"] != paged[i].(map[string]any)["id"] {
			t.Fatalf("report %d differs between one page and pages of 7", i)
		}
	}
	d.do("GET", base+"/threat-feed?hours=1&limit=1001", tok, "").expect(t, 400, "limit: must be a whole number from 1 to 1000")
}
