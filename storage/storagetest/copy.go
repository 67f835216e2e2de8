package storagetest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/port"
)

// Export writes every row; Import fills an empty store with them, giving
// the same reports, accounts and secrets (the copied secret replacing one
// the target made), and refuses a store that is not empty.
func testCopy(t *testing.T, b Backend) {
	src := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, src, "copy@example.com")
	tok, _ := newToken(u.ID)
	if _, err := src.CreateToken(c, tok); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 3 {
		th := report(t, u.ID, core.TypeDomain, "", fmt.Sprintf("copy-%d.example.com", i))
		th.Details.Tags = []string{"copied", fmt.Sprint(i)}
		create(t, src, th)
		if i > 0 {
			verify(t, src, th.ID, now())
		}
		ids = append(ids, th.ID)
	}
	secret, err := src.Secret(c, "cursor")
	if err != nil {
		t.Fatal(err)
	}
	type batch struct {
		table string
		rows  []byte
	}
	var batches []batch
	if err := src.Export(c, func(table string, rows []byte) error {
		batches = append(batches, batch{table, append([]byte(nil), rows...)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	feed := func(into port.Store) (map[string]int64, error) {
		i := 0
		return into.Import(c, func() (string, []byte, bool, error) {
			if i == len(batches) {
				return "", nil, false, nil
			}
			i++
			return batches[i-1].table, batches[i-1].rows, true, nil
		})
	}
	dst := open(t, b, dbName(t))
	// A target that served a feed before the copy made its own secret: the
	// copied one replaces it.
	if own, err := dst.Secret(c, "cursor"); err != nil || own == secret {
		t.Fatalf("the target's own secret: %q %v", own, err)
	}
	counts, err := feed(dst)
	if err != nil {
		t.Fatal(err)
	}
	if counts["users"] != 1 || counts["api_tokens"] != 1 || counts["threats"] != 3 {
		t.Fatalf("rows written: %v", counts)
	}
	want, _ := src.Stats(c)
	if got, err := dst.Stats(c); err != nil || got != want {
		t.Fatalf("stats after the copy: %+v, want %+v (%v)", got, want, err)
	}
	for _, id := range ids {
		w, _ := src.GetThreat(c, id)
		g, err := dst.GetThreat(c, id)
		if err != nil || !reflect.DeepEqual(g, w) {
			t.Fatalf("copied report:\n %+v\nwant\n %+v (%v)", g, w, err)
		}
	}
	if o, err := dst.Authenticate(c, tok.Hash); err != nil || o.User.ID != u.ID {
		t.Fatalf("copied token: %+v %v", o.User, err)
	}
	if got, err := dst.Secret(c, "cursor"); err != nil || got != secret {
		t.Fatalf("copied secret %q %v", got, err)
	}
	// Not empty now: a second copy is refused and changes nothing.
	if _, err := feed(dst); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("a copy into a store that is not empty: %v", err)
	}
	if got, _ := dst.Stats(c); got != want {
		t.Fatalf("a refused copy changed the store: %+v", got)
	}
}

// RuleIDs: an indicator keeps its first number, on every call and after a
// reopen; numbers are not shared; rev moves by one when the basis changes
// and only then; daemons asking at once get the same numbers; a bad query
// is refused whole.
func testRuleIDs(t *testing.T, b Backend) {
	db := dbName(t)
	s := open(t, b, db)
	c := ctx(t)
	ask := func(s port.Store, rules ...core.RuleBasis) []core.RuleID {
		t.Helper()
		got, err := s.RuleIDs(c, core.RuleIDQuery{Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(rules) {
			t.Fatalf("%d results for %d rules", len(got), len(rules))
		}
		for i, g := range got {
			if g.Indicator != rules[i].Indicator || g.Number < 1 || g.Rev < 1 {
				t.Fatalf("result %d = %+v for %+v", i, g, rules[i])
			}
		}
		return got
	}
	a := core.RuleBasis{Indicator: "domain:evil.example", Basis: "t1:1"}
	ip := core.RuleBasis{Indicator: "ip:203.0.113.9", Basis: "t2:1"}
	first := ask(s, a, ip)
	if first[0].Number == first[1].Number || first[0].Rev != 1 || first[1].Rev != 1 {
		t.Fatalf("first numbers: %+v", first)
	}
	if again := ask(s, ip, a); again[0] != first[1] || again[1] != first[0] {
		t.Fatalf("asked again: %+v, first %+v", again, first)
	}
	a.Basis = "t1:2"
	moved := ask(s, a, ip)
	if moved[0].Number != first[0].Number || moved[0].Rev != 2 || moved[1] != first[1] {
		t.Fatalf("after a's basis changed: %+v (first %+v)", moved, first)
	}
	if same := ask(s, a); same[0].Rev != 2 {
		t.Fatalf("the same basis again moved rev: %+v", same)
	}
	// Concurrent callers (two daemons) asking new indicators at once.
	var wg sync.WaitGroup
	results := make([][]core.RuleID, 4)
	for i := range results {
		wg.Go(func() {
			got, err := s.RuleIDs(c, core.RuleIDQuery{Rules: []core.RuleBasis{
				{Indicator: "domain:c1.example", Basis: "t3:1"}, {Indicator: "domain:c2.example", Basis: "t3:1"}}})
			if err != nil {
				t.Error(err)
			}
			results[i] = got
		})
	}
	wg.Wait()
	for _, r := range results[1:] {
		if !reflect.DeepEqual(r, results[0]) {
			t.Fatalf("concurrent callers got %+v and %+v", results[0], r)
		}
	}
	numbers := map[int64]bool{first[0].Number: true, first[1].Number: true}
	for _, r := range results[0] {
		if numbers[r.Number] {
			t.Fatalf("number %d given twice", r.Number)
		}
		numbers[r.Number] = true
	}
	_ = s.Close()
	s = open(t, b, db)
	if reopened := ask(s, a, ip); reopened[0] != moved[0] || reopened[1] != moved[1] {
		t.Fatalf("after a reopen: %+v, before %+v", reopened, moved)
	}
	// Refused whole: a repeated indicator, an empty basis, too many.
	for _, q := range []core.RuleIDQuery{
		{Rules: []core.RuleBasis{a, a}},
		{Rules: []core.RuleBasis{{Indicator: "domain:x.example"}}},
		{Rules: make([]core.RuleBasis, core.MaxRuleIDs+1)},
	} {
		if _, err := s.RuleIDs(c, q); !errors.Is(err, core.ErrInvalid) {
			t.Fatalf("RuleIDs(%d rules) = %v, want invalid", len(q.Rules), err)
		}
	}
	if got := ask(s, core.RuleBasis{Indicator: "domain:x.example", Basis: "t9:1"}); numbers[got[0].Number] {
		t.Fatalf("a new indicator got a number already given: %+v", got)
	}
}
