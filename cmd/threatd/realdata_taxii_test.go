package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
)

// pullRealTAXII pulls the threats collection of the real reports by next,
// in pages of 1,000 objects as TIPs ask for them (each page renders about
// 250 reports, in two exporter calls at once): every report's malware
// object comes exactly once, no object comes twice, every relationship
// joins objects of the collection, and date_added only grows from page to
// page.
func pullRealTAXII(t *testing.T, d *daemon, tok string, ids []string) {
	t.Helper()
	malware := map[string]int{}
	seen := map[string]bool{}
	var refs [][2]string
	var order []string // the ids of the first pages, in order
	var last time.Time
	pages := 0
	for next := ""; ; pages++ {
		page := taxiiPage(t, d, tok, 1000, next)
		if len(page.Objects) == 0 || len(page.Objects) > 1000 {
			t.Fatalf("TAXII page %d: %d objects", pages+1, len(page.Objects))
		}
		if !page.first.After(last) || page.last.Before(page.first) {
			t.Fatalf("TAXII page %d: date_added %v to %v after a page that ended at %v", pages+1, page.first, page.last, last)
		}
		last = page.last
		for _, o := range page.Objects {
			if seen[o.ID] {
				t.Fatalf("TAXII page %d: %s came twice", pages+1, o.ID)
			}
			seen[o.ID] = true
			if pages < 3 {
				order = append(order, o.ID)
			}
			switch o.Type {
			case "malware":
				for _, r := range o.Refs {
					if r.Source == "threatd" {
						malware[r.ExternalID]++
					}
				}
			case "relationship":
				refs = append(refs, [2]string{o.SourceRef, o.TargetRef})
			}
		}
		if !page.More {
			break
		}
		next = page.Next
	}
	for _, id := range ids {
		if malware[id] != 1 {
			t.Fatalf("report %s has %d malware objects in the TAXII collection, want 1", id, malware[id])
		}
	}
	for _, r := range refs {
		if !seen[r[0]] || !seen[r[1]] {
			t.Fatalf("a relationship joins %s and %s, not both in the collection", r[0], r[1])
		}
	}
	t.Logf("TAXII: %d objects in %d pages, %d malware objects for %d reports, %d relationships", len(seen), pages+1, len(malware), len(ids), len(refs))
	if len(malware) != len(ids) {
		t.Fatalf("%d malware objects for %d reports", len(malware), len(ids))
	}
	// Pages of 40 objects render about ten reports in one exporter call:
	// they list the same objects in the same order as the pages of 1,000.
	var small []string
	for next := ""; len(small) < len(order); {
		page := taxiiPage(t, d, tok, 40, next)
		for _, o := range page.Objects {
			small = append(small, o.ID)
		}
		if !page.More {
			break
		}
		next = page.Next
	}
	if !slices.Equal(small[:min(len(small), len(order))], order) {
		t.Fatalf("pages of 40 list %d objects otherwise than the first %d of pages of 1,000", len(small), len(order))
	}
}

// taxiiObjectsPage is what pullRealTAXII reads of a page of objects.
type taxiiObjectsPage struct {
	More    bool   `json:"more"`
	Next    string `json:"next"`
	Objects []struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		SourceRef string `json:"source_ref"`
		TargetRef string `json:"target_ref"`
		Refs      []struct {
			Source     string `json:"source_name"`
			ExternalID string `json:"external_id"`
		} `json:"external_references"`
	} `json:"objects"`
	first, last time.Time // X-TAXII-Date-Added-First and -Last
}

// taxiiPage reads a page of the threats collection's objects.
func taxiiPage(t *testing.T, d *daemon, tok string, limit int, next string) taxiiObjectsPage {
	t.Helper()
	q := url.Values{"limit": {fmt.Sprint(limit)}}
	if next != "" {
		q.Set("next", next)
	}
	req, _ := http.NewRequest("GET", d.base+"/taxii2/api/collections/threats/objects/?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", taxiiAccept)
	res, err := d.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var page taxiiObjectsPage
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil || res.StatusCode != 200 {
		t.Fatalf("TAXII page of %d after %q: %d %v", limit, next, res.StatusCode, err)
	}
	var err1, err2 error
	page.first, err1 = time.Parse(time.RFC3339Nano, res.Header.Get("X-TAXII-Date-Added-First"))
	page.last, err2 = time.Parse(time.RFC3339Nano, res.Header.Get("X-TAXII-Date-Added-Last"))
	if err1 != nil || err2 != nil {
		t.Fatalf("TAXII page of %d: date_added headers %v %v", limit, err1, err2)
	}
	return page
}
