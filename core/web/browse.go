package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"golang.org/x/sync/singleflight"

	"github.com/threatd/threatd/core"
)

// browsePage is how many reports one page of /threats lists.
const browsePage = 50

// browseFilter is /threats' query: filters, order and keyset position.
type browseFilter struct {
	Type, Ecosystem, Severity, From, To, Sort string
	query                                     core.ThreatQuery
	// before: the position is the first report of the page after the one
	// asked for (a "Previous page" link), not the last of the page before.
	before bool
}

// parseBrowse validates /threats' parameters; the error names the one that
// is wrong.
func parseBrowse(qs url.Values) (browseFilter, error) {
	f := browseFilter{Type: qs.Get("type"), Ecosystem: qs.Get("ecosystem"), Severity: qs.Get("severity"),
		From: qs.Get("from"), To: qs.Get("to"), Sort: qs.Get("sort")}
	q := &f.query
	var err error
	if f.Type != "" {
		if q.ReportType, err = core.ParseReportType(f.Type); err != nil {
			return f, err
		}
	}
	if f.Ecosystem != "" {
		if q.Registry, err = core.ParseRegistry("ecosystem", f.Ecosystem); err != nil {
			return f, err
		}
	}
	if f.Severity != "" {
		if q.Severity, err = core.ParseSeverity(f.Severity); err != nil {
			return f, err
		}
	}
	day := func(name, v string) (time.Time, error) {
		t, err := time.Parse("2006-01-02", v)
		if err != nil {
			return t, core.Invalid(name, "must be a date such as 2026-11-24 (got %q)", v)
		}
		return t, nil
	}
	if f.From != "" {
		if q.VerifiedFrom, err = day("from", f.From); err != nil {
			return f, err
		}
	}
	if f.To != "" {
		to, err := day("to", f.To)
		if err != nil {
			return f, err
		}
		q.VerifiedTo = to.AddDate(0, 0, 1) // the whole day
	}
	if !q.VerifiedFrom.IsZero() && !q.VerifiedTo.IsZero() && !q.VerifiedFrom.Before(q.VerifiedTo) {
		return f, core.Invalid("to", "must not be before from")
	}
	switch f.Sort {
	case "", "newest":
		f.Sort, q.Descending = "newest", true
	case "oldest":
	default:
		return f, core.Invalid("sort", "must be newest or oldest (got %q)", f.Sort)
	}
	after, before := qs.Get("after"), qs.Get("before")
	if after != "" && before != "" {
		return f, core.Invalid("before", "cannot be given with after: a page follows one report or precedes another")
	}
	for name, c := range map[string]string{"after": after, "before": before} {
		if c == "" {
			continue
		}
		var ok bool
		if q.AfterVerifiedAt, q.AfterID, ok = parseCursor(c); !ok {
			return f, core.Invalid(name, "is not a page of this list: start again from the first page")
		}
		f.before = name == "before"
	}
	return f, nil
}

// cursor is a keyset position in a page's link: the last report's time
// (in microseconds) and id.
func cursor(at time.Time, id string) string {
	return strconv.FormatInt(at.UnixMicro(), 10) + "." + id
}

// parseCursor reads a cursor; ok is false for anything else.
func parseCursor(s string) (at time.Time, id string, ok bool) {
	micros, id, found := strings.Cut(s, ".")
	n, err := strconv.ParseInt(micros, 10, 64)
	if _, uerr := uuid.Parse(id); !found || err != nil || uerr != nil {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n).UTC(), id, true
}

// values are the filter's parameters (for links to other pages).
func (f browseFilter) values() url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"type": f.Type, "ecosystem": f.Ecosystem, "severity": f.Severity, "from": f.From, "to": f.To} {
		if x != "" {
			v.Set(k, x)
		}
	}
	if f.Sort != "newest" {
		v.Set("sort", f.Sort)
	}
	return v
}

// counts caches the totals of /threats' filters while the set of verified
// reports is unchanged (the index's version): a count reads an index range
// as long as the filter selects, once per change instead of per page view.
type counts struct {
	mu      sync.Mutex
	version int64
	byQuery map[string]int64
	flight  singleflight.Group
}

// maxCachedCounts bounds the totals kept (distinct filters).
const maxCachedCounts = 1024

// get returns the cached total of key under version (the cache is
// emptied when the version moves or it is full).
func (c *counts) get(version int64, key string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byQuery == nil || c.version != version || len(c.byQuery) >= maxCachedCounts {
		c.version, c.byQuery = version, map[string]int64{}
	}
	n, ok := c.byQuery[key]
	return n, ok
}

// put caches the total of key counted under version, unless the version
// has moved meanwhile.
func (c *counts) put(version int64, key string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version == version && c.byQuery != nil {
		c.byQuery[key] = n
	}
}

func (s *Site) total(ctx context.Context, q core.ThreatQuery) (int64, error) {
	q.AfterID, q.AfterVerifiedAt, q.Limit, q.Descending = "", time.Time{}, 0, false
	if s.indexReady() {
		// By type and ecosystem alone: the index keeps these totals.
		byClass := q
		byClass.ReportType, byClass.Registry = "", ""
		if byClass == (core.ThreatQuery{}) {
			return int64(s.index.Count(q.ReportType, q.Registry)), nil
		}
	}
	key := fmt.Sprintf("%+v", q)
	version := s.index.Version()
	if n, ok := s.counts.get(version, key); ok {
		return n, nil
	}
	// One count per filter at a time: the visitors who ask for it
	// meanwhile wait for that one (at a million reports a count of half of
	// them reads for a fifth of a second; eight at once took 0.7 s each).
	// The count is theirs too, so the first visitor leaving does not
	// cancel it under the others.
	shared := context.WithoutCancel(ctx)
	v, err, _ := s.counts.flight.Do(fmt.Sprintf("%d %s", version, key), func() (any, error) {
		n, err := s.store.CountThreats(shared, q)
		if err == nil {
			s.counts.put(version, key, n)
		}
		return n, err
	})
	return v.(int64), err
}

// browse is /threats: every verified report, filtered, newest or oldest
// first, one keyset page at a time, with the total.
func (s *Site) browse(c *echo.Context) error {
	ctx := c.Request().Context()
	f, err := parseBrowse(c.QueryParams())
	data := map[string]any{"Title": "Verified threats", "F": f, "Types": core.ReportTypes,
		"Ecosystems": append(append([]string{}, core.PackageRegistries...), core.ContainerRegistries...),
		"Severities": []core.Severity{core.SeverityCritical, core.SeverityHigh, core.SeverityMedium, core.SeverityLow}}
	var fe *core.FieldError
	if errors.As(err, &fe) {
		data["Error"] = fe.Error()
		return s.render(c, http.StatusBadRequest, "threats", data)
	}
	q := f.query
	q.Limit, q.Listing = browsePage+1, true
	if f.before {
		// The page before a report: read backwards from it, then show
		// in the list's order.
		q.Descending = !q.Descending
	}
	list, err := s.store.QueryThreats(ctx, q)
	if err != nil {
		return err
	}
	total, err := s.total(ctx, f.query)
	if err != nil {
		return err
	}
	more := len(list) > browsePage
	if more {
		list = list[:browsePage]
	}
	if f.before {
		slices.Reverse(list)
	}
	v := f.values()
	link := func(param string, t core.Threat) string {
		u := url.Values{}
		for k, x := range v {
			u[k] = x
		}
		u.Set(param, cursor(*t.VerifiedAt, t.ID))
		return "/threats?" + u.Encode()
	}
	if len(list) > 0 {
		// Forward: a next page when more follow; a previous one when the
		// page started after a report. Backward: the reverse.
		if more && !f.before || f.before {
			data["Next"] = link("after", list[len(list)-1])
		}
		if more && f.before || !f.before && f.query.AfterID != "" {
			data["Prev"] = link("before", list[0])
		}
	}
	if data["Prev"] != nil {
		data["First"] = "/threats?" + v.Encode()
	}
	data["Threats"], data["Total"], data["Shown"] = list, total, len(list)
	return s.render(c, http.StatusOK, "threats", data)
}
