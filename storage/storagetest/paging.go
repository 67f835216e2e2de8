package storagetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/feed"
	"github.com/threatd/threatd/core/taxii"
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/stix"
)

// pagingMax is the largest page the paging contract configures
// (limits.feed_page_max, TAXII's page): the test has more rows than that.
const pagingMax = 50

// pageSizes are the sizes every paged read is walked with: 1, 7, the
// largest page and one more (refused where a limit is a bound, the largest
// page where the protocol lets a server send fewer, as TAXII does).
var pageSizes = []int{1, 7, pagingMax, pagingMax + 1}

// RunPaging is the paging contract: every paged read of the service —
// the paid feed in both modes, query-by-username, TAXII objects and
// manifest, My submissions, the review queue (and review list), and the
// exports' selections — returns every row exactly once, in its order,
// against a model of what the test wrote, at page sizes 1, 7, the maximum
// and the maximum + 1, with more rows than the largest page, and with a run
// of large reports that makes pages end at their byte budget. Each read is
// the service's own use case (package core) over the backend's real plugin
// process; TAXII pages are rendered by the STIX exporter plugin of host.
func RunPaging(t *testing.T, b Backend, host *plugins.Host) {
	exporters := plugins.NewExporters(host)
	defer exporters.Close()
	exporters.Start([]string{"stix"})
	s := open(t, b, dbName(t))
	// Hundreds of pages through two plugin processes: more than ctx's
	// minute under -race on a busy machine.
	c, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	alice := user(t, s, "alice@example.com")
	bob := user(t, s, "bob@example.com")

	// The model: what was written, in the order it was written.
	type event struct {
		id   string
		kind string
	}
	var (
		events    []event  // every published change, in commit order
		verified  []string // reports in the order they were verified
		withdrawn = map[string]bool{}
		pending   []string // pending reports, oldest first
		submitted []string // alice's reports, oldest first
		byID      = map[string]core.Threat{}
	)
	const published, waiting = 130, 60
	big := strings.Repeat("A large payload line that makes pages end at their byte budget. ", 2900) // ~190 KB
	start := now().Add(-time.Minute)
	for i := range published + waiting {
		th := report(t, alice.ID, core.TypePackage, []string{"npm", "pypi"}[i%2], fmt.Sprintf("paging-pkg-%03d", i))
		th.CreatedAt = start.Add(time.Duration(i) * time.Millisecond)
		th.UpdatedAt = th.CreatedAt
		if i%3 == 0 {
			th.Details.Publisher = "Shared-Publisher"
		}
		if i >= 40 && i < 100 {
			th.Details.PayloadDescription = big // 60 × 190 KB: a page of 50 holds more than 4 MiB
		}
		create(t, s, th)
		byID[th.ID] = th
		submitted = append(submitted, th.ID)
		if i >= published {
			pending = append(pending, th.ID)
			continue
		}
		// Distinct, increasing verification times: the order of the
		// verified_at keyset pages.
		verify(t, s, th.ID, start.Add(30*time.Second+time.Duration(i)*time.Millisecond))
		verified = append(verified, th.ID)
		events = append(events, event{th.ID, core.ChangeVerified})
	}
	// Five revisions and five withdrawals: new changes of reports already
	// published.
	for _, id := range verified[10:15] {
		th, err := s.GetThreat(c, id)
		if err != nil {
			t.Fatal(err)
		}
		_, rev, err := modifyThreat(c, s, core.Modification{ThreatID: id, AuthorID: bob.ID, AuthorName: bob.Name,
			Patch: core.Patch{Submission: core.Submission{ThreatDescription: ptr("revised for the paging contract")}}, BaseRevision: th.Revision, At: now()}, noLimits)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := decideRevision(c, s, core.RevisionDecision{RevisionID: rev.ID, Approve: true, ActorName: "Rita", At: now()}); err != nil {
			t.Fatal(err)
		}
		events = append(events, event{id, core.ChangeRevised})
	}
	for _, id := range verified[20:25] {
		if _, err := s.ReviewThreat(c, core.Review{ThreatID: id, Decision: core.DecisionReject, Note: "withdrawn", ActorName: "Rita", At: now()}); err != nil {
			t.Fatal(err)
		}
		withdrawn[id] = true
		events = append(events, event{id, core.ChangeWithdrawn})
	}
	live := slices.DeleteFunc(slices.Clone(verified), func(id string) bool { return withdrawn[id] })

	// A storage limit outside 1..MaxPage is refused, never replaced.
	for _, bad := range []int{0, -1, core.MaxPage + 1} {
		if _, err := s.Feed(c, core.FeedQuery{Limit: bad}); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Feed limit %d: %v, want ErrInvalid", bad, err)
		}
		if _, err := s.QueryThreats(c, core.ThreatQuery{Limit: bad}); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("QueryThreats limit %d: %v, want ErrInvalid", bad, err)
		}
		if _, err := s.LatestVerified(c, core.LatestFilter{Limit: bad}); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("LatestVerified limit %d: %v, want ErrInvalid", bad, err)
		}
		if _, err := s.Changes(c, core.ChangeQuery{After: 0, Limit: bad}); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Changes limit %d: %v, want ErrInvalid", bad, err)
		}
		if _, err := s.ListPending(c, core.PendingQuery{Limit: bad}); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("ListPending limit %d: %v, want ErrInvalid", bad, err)
		}
		if _, err := s.ListSubmissions(c, core.SubmissionQuery{UserID: alice.ID, Offset: 0, Limit: bad}); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("ListSubmissions limit %d: %v, want ErrInvalid", bad, err)
		}
	}
	// A limit up to MaxPage is honoured: a feed page of 1,001 rows (a page
	// of 1,000 and the row that says whether more follow) came back as 100.
	if items, err := s.Feed(c, core.FeedQuery{Limit: 1001}); err != nil || len(items) != len(events) {
		t.Errorf("Feed limit 1001: %d rows, %v; want all %d", len(items), err, len(events))
	}
	if items, err := s.Feed(c, core.FeedQuery{Limit: core.MaxPage, Published: true}); err != nil || len(items) != len(live) {
		t.Errorf("Feed limit MaxPage: %d rows, %v; want all %d", len(items), err, len(live))
	}
	if got, err := s.QueryThreats(c, core.ThreatQuery{Limit: core.MaxPage}); err != nil || len(got) != len(live) {
		t.Errorf("QueryThreats limit MaxPage: %d rows, %v; want %d", len(got), err, len(live))
	}
	if got, err := s.LatestVerified(c, core.LatestFilter{Limit: core.MaxPage}); err != nil || len(got) != len(live) {
		t.Errorf("LatestVerified limit MaxPage: %d rows, %v; want %d", len(got), err, len(live))
	}
	if l, err := s.ListPending(c, core.PendingQuery{Limit: core.MaxPage}); err != nil || len(l.Threats) != waiting || l.Total != waiting {
		t.Errorf("ListPending limit MaxPage: %d rows of %d, %v; want %d", len(l.Threats), l.Total, err, waiting)
	}
	if _, err := s.ListUsers(c, core.UserQuery{After: "", Limit: core.MaxListUsers + 1}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("ListUsers above its maximum: %v, want ErrInvalid", err)
	}

	paid := feed.New(s, feed.Limits{MaxWindow: 2 * time.Hour, PageMax: pagingMax})
	who := core.Principal{User: alice, Token: core.Token{ID: "paging-token", UserID: alice.ID}}
	same := func(what string, size int, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s, pages of %d: %d rows, want %d (first difference at %d)", what, size, len(got), len(want), firstDiff(got, want))
		}
	}
	for _, size := range pageSizes {
		limit := strconv.Itoa(size)
		over := size > pagingMax // limit is a bound there: refused with a clear error

		// The paid feed, verified mode: each still-verified report once,
		// in the order it was verified.
		var got []string
		bytesCut := false
		err := walk(func(cur string) (string, error) {
			p, err := paid.Feed(c, who, feed.Request{Hours: "1", Limit: limit, Cursor: cur})
			for _, th := range p.Threats {
				got = append(got, th.ID)
			}
			if p.NextCursor != "" && len(p.Threats) < size {
				bytesCut = true
			}
			return p.NextCursor, err
		})
		if over {
			if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "limit") {
				t.Errorf("feed limit %d: %v, want a limit error", size, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("feed, pages of %d: %v", size, err)
		}
		same("threat-feed (verified)", size, got, live)
		if size == pagingMax && !bytesCut {
			t.Errorf("threat-feed, pages of %d: no page ended at its byte budget (60 reports of 190 KB in a row)", size)
		}

		// Changes mode: every change once, in commit order; an open feed
		// always has a cursor, so it is read until a page is empty.
		var changes []string
		var want []string
		for _, e := range events {
			want = append(want, e.id+"/"+e.kind)
		}
		if err := walk(func(cur string) (string, error) {
			p, err := paid.Feed(c, who, feed.Request{Hours: "1", Limit: limit, Cursor: cur, Mode: feed.ModeChanges})
			for _, it := range p.Changes {
				changes = append(changes, it.Threat.ID+"/"+it.Event.Kind)
			}
			if len(p.Changes) == 0 {
				return "", err
			}
			return p.NextCursor, err
		}); err != nil {
			t.Fatalf("changes feed, pages of %d: %v", size, err)
		}
		same("threat-feed (changes)", size, changes, want)

		// query-by-username: the publisher's still-verified reports,
		// newest verification first.
		want = nil
		for i := len(live) - 1; i >= 0; i-- {
			if byID[live[i]].Details.Publisher == "Shared-Publisher" {
				want = append(want, live[i])
			}
		}
		got = nil
		if err := walk(func(cur string) (string, error) {
			p, err := paid.ByPublisher(c, who, "shared-publisher", cur, limit)
			for _, th := range p.Threats {
				got = append(got, th.ID)
			}
			return p.NextCursor, err
		}); err != nil {
			t.Fatalf("query-by-username, pages of %d: %v", size, err)
		}
		same("query-by-username", size, got, want)
	}

	// The exports' selections: every verified report, oldest first
	// (export osv, the archive and exporter_routes' "all"), and the
	// rolling window (every report that changed, once, as it is now).
	sel := core.NewSelections(s)
	all, err := sel.All(c, "")
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	if err := all(func(th core.Threat) error { exported = append(exported, th.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	same("export (all)", 0, exported, live)
	window, err := sel.Window(c, "", "1", "")
	if err != nil {
		t.Fatal(err)
	}
	exported = nil
	for _, th := range window {
		exported = append(exported, th.ID)
		if th.Status == core.StatusRejected != withdrawn[th.ID] {
			t.Errorf("export (window): %s is %s, as it is now", th.ID, th.Status)
		}
	}
	same("export (window)", 0, exported, verified) // each once, at its first change
	var lastChange []string
	seen := map[string]bool{}
	for i := len(events) - 1; i >= 0; i-- { // the order of each report's last change
		if !seen[events[i].id] {
			seen[events[i].id] = true
			lastChange = append(lastChange, events[i].id)
		}
	}
	slices.Reverse(lastChange)

	// The review queue and review list: pending reports, oldest first, by
	// keyset; the count is of every pending report.
	for _, size := range pageSizes {
		var got []string
		q := core.PendingQuery{Limit: size}
		for {
			pl, err := s.ListPending(c, q)
			page, total := pl.Threats, pl.Total
			if err != nil {
				t.Fatal(err)
			}
			if total != waiting {
				t.Fatalf("ListPending: total %d, want %d", total, waiting)
			}
			for _, th := range page {
				got = append(got, th.ID)
			}
			if len(page) < size {
				break
			}
			q.AfterCreatedAt, q.AfterID = page[len(page)-1].CreatedAt, page[len(page)-1].ID
		}
		same("review queue", size, got, pending)

		// My submissions: newest first, by page number.
		want := slices.Clone(submitted)
		slices.Reverse(want)
		got = nil
		for off := 0; ; off += size {
			sl, err := s.ListSubmissions(c, core.SubmissionQuery{UserID: alice.ID, Offset: off, Limit: size})
			page, total := sl.Threats, sl.Total
			if err != nil {
				t.Fatal(err)
			}
			if total != len(submitted) {
				t.Fatalf("ListSubmissions: total %d, want %d", total, len(submitted))
			}
			for _, th := range page {
				got = append(got, th.ID)
			}
			if off+size >= total {
				break
			}
		}
		same("My submissions", size, got, want)
	}

	// TAXII: the collection holds each published report once, at its
	// latest change (withdrawn ones revoked), after the shared objects;
	// objects and manifest walked by next at every page size.
	svc := taxii.New(s, exporters, "threatd")
	col, _ := taxii.FindCollection(taxii.CollectionAll)
	var wantObjects []string
	for _, id := range lastChange {
		th, err := s.GetThreat(c, id)
		if err != nil {
			t.Fatal(err)
		}
		wantObjects = append(wantObjects, th.STIXIDs().All(th.IOCs)...)
	}
	for _, size := range pageSizes {
		var got []string
		shared := 0
		pages := 0
		if err := walk(func(next string) (string, error) {
			pages++
			p, err := svc.Page(c, taxii.Query{Collection: col, Limit: size, Next: next})
			for _, o := range p.Objects {
				if o.Type == "identity" || o.Type == "marking-definition" || o.Type == "extension-definition" {
					shared++
					continue
				}
				got = append(got, o.ID)
			}
			if p.More != (p.Next != "") {
				return "", fmt.Errorf("more %v with next %q", p.More, p.Next)
			}
			if len(p.Objects) > size {
				return "", fmt.Errorf("a page of %d objects, limit %d", len(p.Objects), size)
			}
			return p.Next, err
		}); err != nil {
			t.Fatalf("TAXII, pages of %d: %v", size, err)
		}
		if want := len(stix.SharedObjects("threatd")); shared != want {
			t.Errorf("TAXII, pages of %d: %d shared objects, want %d", size, shared, want)
		}
		same("TAXII objects", size, got, wantObjects)
		if size == 1 && pages != len(wantObjects)+shared {
			t.Errorf("TAXII, pages of 1: %d pages for %d objects", pages, len(wantObjects)+shared)
		}
	}
	if err := revokedAreWithdrawn(c, svc, col, withdrawn); err != nil {
		t.Error(err)
	}
}

// walk calls page with "" and then with each cursor it returns until one
// is empty (at most 100,000 pages).
func walk(page func(cursor string) (string, error)) error {
	cur := ""
	for range 100_000 {
		next, err := page(cur)
		if err != nil || next == "" {
			return err
		}
		cur = next
	}
	return errors.New("paging does not end")
}

// revokedAreWithdrawn checks that the malware object of each withdrawn
// report, and only theirs, is revoked.
func revokedAreWithdrawn(c context.Context, x *taxii.Service, col taxii.Collection, withdrawn map[string]bool) error {
	revoked := 0
	err := walk(func(next string) (string, error) {
		p, err := x.Page(c, taxii.Query{Collection: col, Limit: 1000, Types: []string{"malware"}, Next: next})
		for _, o := range p.Objects {
			var m struct {
				Revoked bool `json:"revoked"`
			}
			if err := json.Unmarshal(o.JSON, &m); err != nil {
				return "", err
			}
			if m.Revoked {
				revoked++
			}
		}
		return p.Next, err
	})
	if err != nil {
		return err
	}
	if revoked != len(withdrawn) {
		return fmt.Errorf("TAXII: %d revoked malware objects, want %d", revoked, len(withdrawn))
	}
	return nil
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
