package storagetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// testBrowse is the contract of the web site's browsing reads: counts under
// each filter, the indicator look-up (verified reports only, replaced when
// a revision changes the indicators), and the canonical key prefix range.
func testBrowse(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "browse@example.com")
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	names := []string{"lodash-evil", "lodash-evil2", "lodas", "lodash.x", "react-evil", "lodash-pending"}
	ids := map[string]string{}
	for i, n := range names {
		th := report(t, u.ID, core.TypePackage, core.RegistryNPM, n)
		th.Details.SeverityLevel = []core.Severity{core.SeverityCritical, core.SeverityHigh}[i%2]
		th.Details.PayloadDescription = fmt.Sprintf("Posts tokens to https://exfil-%d.example.net/c and 203.0.113.%d", i%2, i%2)
		create(t, s, th)
		ids[n] = th.ID
		if n != "lodash-pending" {
			verify(t, s, th.ID, base.Add(time.Duration(i)*time.Hour))
		}
	}
	dom := report(t, u.ID, core.TypeDomain, "", "evil-browse.example.com")
	dom.Details.SeverityLevel = core.SeverityCritical
	create(t, s, dom)
	verify(t, s, dom.ID, base.Add(10*time.Hour))

	count := func(q core.ThreatQuery, want int64) {
		t.Helper()
		n, err := s.CountThreats(c, q)
		if err != nil || n != want {
			t.Errorf("CountThreats(%+v) = %d, %v; want %d", q, n, err, want)
		}
	}
	count(core.ThreatQuery{}, 6)
	count(core.ThreatQuery{ReportType: core.TypePackage}, 5)
	count(core.ThreatQuery{ReportType: core.TypeDomain}, 1)
	count(core.ThreatQuery{Registry: core.RegistryNPM, Severity: core.SeverityCritical}, 3)
	count(core.ThreatQuery{Severity: core.SeverityCritical}, 4)
	count(core.ThreatQuery{VerifiedFrom: base.Add(time.Hour), VerifiedTo: base.Add(4 * time.Hour)}, 3)
	// The keyset position and the limit do not change a count.
	count(core.ThreatQuery{ReportType: core.TypePackage, AfterID: ids["lodas"], AfterVerifiedAt: base, Limit: 1}, 5)

	// The filters select the same reports in QueryThreats.
	page, err := s.QueryThreats(c, core.ThreatQuery{Severity: core.SeverityCritical, ReportType: core.TypePackage, Descending: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, th := range page {
		got = append(got, th.ResourceIdentifier)
	}
	if want := []string{"react-evil", "lodas", "lodash-evil"}; !slices.Equal(got, want) {
		t.Errorf("critical packages, newest first: %v, want %v", got, want)
	}
	// A listing: the same reports, with the severity and without the text.
	listing, err := s.QueryThreats(c, core.ThreatQuery{Severity: core.SeverityCritical, ReportType: core.TypePackage, Descending: true, Limit: 10, Listing: true})
	if err != nil || len(listing) != len(page) {
		t.Fatalf("listing: %d reports, %v; want %d", len(listing), err, len(page))
	}
	for i, th := range listing {
		if th.ID != page[i].ID || th.Details.SeverityLevel != core.SeverityCritical || th.Details.ThreatDescription != "" || th.VerifiedAt == nil {
			t.Errorf("listing %d: %+v", i, th)
		}
	}

	// Indicators only: the same reports, with their stored indicators and
	// none of their text.
	slim, err := s.QueryThreats(c, core.ThreatQuery{Severity: core.SeverityCritical, ReportType: core.TypePackage, Descending: true, Limit: 10, IOCsOnly: true})
	if err != nil || len(slim) != len(page) {
		t.Fatalf("indicators only: %d reports, %v; want %d", len(slim), err, len(page))
	}
	for i, th := range slim {
		if th.ID != page[i].ID || th.Version != page[i].Version || th.VerifiedAt == nil || th.Details.ThreatDescription != "" ||
			len(th.IOCs) == 0 || !reflect.DeepEqual(th.IOCs, page[i].IOCs) {
			t.Errorf("indicators only %d: %+v, full %+v", i, th, page[i])
		}
	}

	// The indicator look-up: the verified reports that list it.
	byIndicator := func(typ, value string) []string {
		t.Helper()
		q := core.ThreatQuery{IndicatorKey: ioc.Key(typ, value), Descending: true, Limit: 10}
		ths, err := s.QueryThreats(c, q)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := s.CountThreats(c, q); err != nil || n != int64(len(ths)) {
			t.Errorf("CountThreats(indicator %s %s) = %d, %v; listed %d", typ, value, n, err, len(ths))
		}
		var out []string
		for _, th := range ths {
			out = append(out, th.ResourceIdentifier)
		}
		return out
	}
	if got, want := byIndicator(ioc.IP, "203.0.113.1"), []string{"lodash.x", "lodash-evil2"}; !slices.Equal(got, want) {
		t.Errorf("reports naming 203.0.113.1: %v, want %v (the pending report is not listed)", got, want)
	}
	if got := byIndicator(ioc.Domain, "exfil-0.example.net"); len(got) != 3 {
		t.Errorf("reports naming exfil-0.example.net: %v", got)
	}
	if got := byIndicator(ioc.Domain, "nothing.example.net"); len(got) != 0 {
		t.Errorf("an unknown indicator found %v", got)
	}
	// A revision that changes the payload replaces the report's indicators.
	// (It also lowers the severity: the severity filter follows.)
	payload, low := "Now posts to 198.51.100.77 only", string(core.SeverityLow)
	_, rev, err := modifyThreat(c, s, core.Modification{ThreatID: ids["react-evil"], AuthorName: "Olga",
		Patch: core.Patch{Submission: core.Submission{PayloadDescription: &payload, SeverityLevel: &low}}, At: now()}, noLimits)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := decideRevision(c, s, core.RevisionDecision{RevisionID: rev.ID, Approve: true, ActorName: "Rita", At: now()}); err != nil {
		t.Fatal(err)
	}
	if got := byIndicator(ioc.IP, "198.51.100.77"); !slices.Equal(got, []string{"react-evil"}) {
		t.Errorf("after the revision, 198.51.100.77: %v", got)
	}
	if got := byIndicator(ioc.IP, "203.0.113.0"); !slices.Equal(got, []string{"lodas", "lodash-evil"}) {
		t.Errorf("after the revision, 203.0.113.0: %v (react-evil no longer names it)", got)
	}
	count(core.ThreatQuery{Severity: core.SeverityCritical}, 3)
	count(core.ThreatQuery{Severity: core.SeverityLow}, 1)
	if low, err := s.LatestVerified(c, core.LatestFilter{Severity: core.SeverityLow, Limit: 10}); err != nil || len(low) != 1 || low[0].ID != ids["react-evil"] {
		t.Errorf("latest low-severity reports after the revision: %d, %v", len(low), err)
	}

	// The prefix range, in key order, paged by key.
	prefix := func(ps []string, after string, limit int) []string {
		t.Helper()
		ths, err := s.ThreatsByKeyPrefix(c, core.KeyPrefixQuery{Prefixes: ps, After: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, th := range ths {
			out = append(out, th.ResourceIdentifier)
		}
		return out
	}
	if got, want := prefix([]string{"package:npm:lodash"}, "", 10), []string{"lodash-evil", "lodash-evil2", "lodash.x"}; !slices.Equal(got, want) {
		t.Errorf("prefix lodash: %v, want %v", got, want)
	}
	if got, want := prefix([]string{"package:npm:lodash"}, "package:npm:lodash-evil", 1), []string{"lodash-evil2"}; !slices.Equal(got, want) {
		t.Errorf("prefix lodash after lodash-evil: %v, want %v", got, want)
	}
	if got := prefix([]string{"package:pypi:lodash"}, "", 10); len(got) != 0 {
		t.Errorf("prefix in another registry: %v", got)
	}
	if _, err := s.ThreatsByKeyPrefix(c, core.KeyPrefixQuery{Prefixes: []string{""}, After: "", Limit: 10}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("an empty prefix: %v, want ErrInvalid", err)
	}
	if _, err := s.ThreatsByKeyPrefix(c, core.KeyPrefixQuery{Prefixes: nil, After: "", Limit: 10}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("no prefix: %v, want ErrInvalid", err)
	}
	if _, err := s.ThreatsByKeyPrefix(c, core.KeyPrefixQuery{Prefixes: make([]string, core.MaxKeyPrefixes+1), After: "", Limit: 10}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("%d prefixes: %v, want ErrInvalid", core.MaxKeyPrefixes+1, err)
	}
	// Several ranges in one call: merged in key order, each range cut at
	// the limit however many keys it holds, overlapping prefixes once.
	lodashAndReact := []string{"package:npm:react", "package:npm:lodash"}
	if got, want := prefix(lodashAndReact, "", 10), []string{"lodash-evil", "lodash-evil2", "lodash.x", "react-evil"}; !slices.Equal(got, want) {
		t.Errorf("prefixes lodash and react: %v, want %v", got, want)
	}
	if got, want := prefix(lodashAndReact, "", 2), []string{"lodash-evil", "lodash-evil2"}; !slices.Equal(got, want) {
		t.Errorf("prefixes lodash and react, 2: %v, want %v", got, want)
	}
	if got, want := prefix(lodashAndReact, "package:npm:lodash.x", 10), []string{"react-evil"}; !slices.Equal(got, want) {
		t.Errorf("prefixes lodash and react after lodash.x: %v, want %v", got, want)
	}
	if got, want := prefix([]string{"package:npm:lodash", "package:npm:lodash-e", "package:pypi:lodash"}, "", 10), []string{"lodash-evil", "lodash-evil2", "lodash.x"}; !slices.Equal(got, want) {
		t.Errorf("overlapping prefixes: %v, want %v", got, want)
	}

	// A submitter's record: reports by status, for the review queue.
	rej := report(t, u.ID, core.TypeDomain, "", "rejected-browse.example.com")
	create(t, s, rej)
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: rej.ID, Decision: core.DecisionReject, Note: "no", ActorName: "Rita", At: now()}); err != nil {
		t.Fatal(err)
	}
	other := user(t, s, "browse-other@example.com")
	recs, err := s.SubmitterRecords(c, []string{u.ID, other.ID, "00000000-0000-0000-0000-000000000000"})
	if err != nil || len(recs) != 2 {
		t.Fatalf("SubmitterRecords: %+v, %v", recs, err)
	}
	for _, r := range recs {
		want := core.SubmitterRecord{UserID: other.ID, Name: other.Name}
		if r.UserID == u.ID {
			want = core.SubmitterRecord{UserID: u.ID, Name: u.Name, Verified: 6, Rejected: 1, Pending: 1}
		}
		if r != want {
			t.Errorf("SubmitterRecords: %+v, want %+v", r, want)
		}
	}
}
