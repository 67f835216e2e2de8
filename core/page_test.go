package core

import (
	"fmt"
	"testing"
)

// TestFillPage pages a model list of rows of mixed sizes through fillPage
// at page sizes 1, 7, the largest and beyond it, with byte budgets that cut
// pages early: every row comes exactly once, in order, no page is empty or
// over its limit, a page is over its budget only by its last row, and more
// is false exactly at the end.
func TestFillPage(t *testing.T) {
	const n = 2503
	size := func(i int) int { return 100 + (i*7919)%5000 } // 100..5099 bytes
	for _, limit := range []int{1, 7, 1000, 1001, MaxPage} {
		for _, budget := range []int{1, 10_000, 300_000, PageBytes} {
			t.Run(fmt.Sprintf("limit%d/budget%d", limit, budget), func(t *testing.T) {
				pos, reads := 0, 0 // the reader's keyset position: rows after pos
				var got []int
				for pages := 0; ; pages++ {
					if pages > n+1 {
						t.Fatal("paging does not end")
					}
					start := pos
					page, more, err := fillPage(limit, budget, size, func(k int) ([]int, error) {
						if k < 1 || k > MaxPage {
							t.Fatalf("read(%d): out of range", k)
						}
						reads++
						var out []int
						for ; pos < n && len(out) < k; pos++ {
							out = append(out, pos)
						}
						return out, nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if len(page) == 0 && start < n {
						t.Fatalf("empty page at row %d", start)
					}
					if len(page) > limit {
						t.Fatalf("page of %d rows, limit %d", len(page), limit)
					}
					bytes := 0
					for i, r := range page {
						if i > 0 && bytes >= budget {
							t.Fatalf("page goes on after reaching its budget")
						}
						bytes += size(r)
					}
					got = append(got, page...)
					if len(page) > 0 {
						pos = page[len(page)-1] + 1 // resume after the page's last row
					}
					if more != (pos < n) {
						t.Fatalf("more = %v after row %d of %d", more, pos, n)
					}
					if !more {
						break
					}
				}
				if len(got) != n {
					t.Fatalf("%d rows, want %d", len(got), n)
				}
				for i, r := range got {
					if r != i {
						t.Fatalf("row %d is %d", i, r)
					}
				}
			})
		}
	}
}
