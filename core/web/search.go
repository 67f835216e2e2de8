package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// searchPrefixMax bounds the packages listed by name prefix, and
// searchIndicatorMax the reports listed that name an indicator.
const (
	searchPrefixMax    = 20
	searchIndicatorMax = 20
)

// searchResult is what one search found.
type searchResult struct {
	Plan core.SearchPlan
	// Reports are the verified reports about the input itself
	// (check-malicious's semantics); Names those of packages of exactly
	// that name in any registry; Indicators those that name it as an
	// indicator of compromise; Prefix the packages whose names start
	// with it.
	Reports, Names, Indicators, Prefix []core.Threat
	// IndicatorCount is how many verified reports name the input (the
	// most recent searchIndicatorMax are listed); PrefixMore says that
	// more packages than Prefix lists start with the name.
	IndicatorCount int64
	PrefixMore     bool
	// CheckURL is the API request that answers the same question.
	CheckURL string
}

// Malicious says whether the input itself is in the database.
func (r searchResult) Malicious() bool { return r.Count() > 0 }

// Count is the number of verified reports about the input itself.
func (r searchResult) Count() int { return len(r.Reports) + len(r.Names) }

// home is the search box and the latest verified threats. q is the one
// box (core.ClassifySearch); the advanced fields are check-malicious's
// parameters, as before.
func (s *Site) home(c *echo.Context) error {
	ctx := c.Request().Context()
	qs := c.QueryParams()
	data := map[string]any{"Title": "Search the threat database", "Types": core.ReportTypes, "Q": qs,
		"Advanced": qs.Get("resource_identifier") != "" || qs.Get("purl") != ""}
	var (
		res searchResult
		err error
	)
	switch {
	case qs.Has("q"):
		data["Searched"] = true
		res, err = s.search(ctx, qs.Get("q"))
	case data["Advanced"] == true:
		data["Searched"] = true
		res, err = s.advancedSearch(ctx, qs)
	}
	var fe *core.FieldError
	switch {
	case errors.As(err, &fe):
		data["SearchError"] = fe.Message
	case errors.Is(err, errIndexLoading):
		data["SearchError"] = "threatd is starting and its index of verified reports is still loading: try again in a few seconds."
	case err != nil:
		return err
	default:
		data["Result"] = res
	}
	latest, err := s.latest.Entry(ctx, core.LatestFilter{Limit: s.opts.LatestCount})
	if err != nil {
		return err
	}
	data["Latest"] = latest.Threats
	status := http.StatusOK
	if fe != nil {
		status = http.StatusBadRequest
	}
	return s.render(c, status, "home", data)
}

var errIndexLoading = errors.New("the index is loading")

// search answers the one search box.
func (s *Site) search(ctx context.Context, input string) (searchResult, error) {
	plan, err := core.ClassifySearch(input)
	if err != nil {
		return searchResult{}, err
	}
	if !s.indexReady() {
		return searchResult{}, errIndexLoading
	}
	res := searchResult{Plan: plan}
	if plan.Check != nil {
		if res.Reports, err = s.matches(ctx, *plan.Check); err != nil {
			return res, err
		}
		res.CheckURL = checkURL(s.opts.BasePath, *plan.Check, plan.IndicatorType != "")
	}
	if plan.Name != "" {
		q := core.CheckQuery{ReportType: core.TypePackage, ResourceIdentifier: plan.Name}
		if res.Names, err = s.matches(ctx, q); err != nil {
			return res, err
		}
		if res.CheckURL == "" {
			res.CheckURL = checkURL(s.opts.BasePath, q, false)
		}
		if res.Prefix, res.PrefixMore, err = s.byPrefix(ctx, plan.Name, res.Names); err != nil {
			return res, err
		}
	}
	if plan.IndicatorType != "" && !res.Malicious() {
		q := core.ThreatQuery{IndicatorKey: ioc.Key(plan.IndicatorType, plan.IndicatorValue), Descending: true, Limit: searchIndicatorMax}
		if res.Indicators, err = s.store.QueryThreats(ctx, q); err != nil {
			return res, err
		}
		// A list shorter than its limit is the whole of it: counted only
		// when there may be more.
		res.IndicatorCount = int64(len(res.Indicators))
		if len(res.Indicators) == searchIndicatorMax {
			if res.IndicatorCount, err = s.total(ctx, q); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// advancedSearch answers check-malicious's parameters.
func (s *Site) advancedSearch(ctx context.Context, qs url.Values) (searchResult, error) {
	req := core.CheckRequest{ReportType: qs.Get("report_type"), ResourceIdentifier: qs.Get("resource_identifier"),
		Ecosystem: qs.Get("ecosystem"), Version: qs.Get("version"), Purl: qs.Get("purl")}
	if req.Purl != "" && req.ResourceIdentifier == "" {
		// The form's type select always sends a value; a purl alone is
		// the search.
		req.ReportType = ""
	}
	q, err := req.Resolve()
	if err != nil {
		return searchResult{}, err
	}
	if !s.indexReady() {
		return searchResult{}, errIndexLoading
	}
	res := searchResult{Plan: core.SearchPlan{Input: q.ResourceIdentifier, Kind: core.SearchKind(q.ReportType), Check: &q}}
	res.CheckURL = checkURL(s.opts.BasePath, q, false)
	res.Reports, err = s.matches(ctx, q)
	return res, err
}

// matches are the verified reports a check finds, newest first.
func (s *Site) matches(ctx context.Context, q core.CheckQuery) ([]core.Threat, error) {
	keys, err := core.CheckKeys(q)
	if err != nil {
		var fe *core.FieldError
		if errors.As(err, &fe) && q.ReportType == core.TypePackage {
			return nil, nil // not a valid name in any registry
		}
		return nil, err
	}
	return s.index.Matches(ctx, keys, q.Version)
}

// byPrefix lists up to searchPrefixMax verified packages whose names start
// with name, in each registry where name is valid (one storage call for all
// of them), in key order, leaving out those in exact; more says there are
// others (the page asks for more of the name).
func (s *Site) byPrefix(ctx context.Context, name string, exact []core.Threat) (out []core.Threat, more bool, err error) {
	var prefixes []string
	for _, reg := range core.PackageRegistries {
		if c, err := core.CanonicalIdentifier(core.TypePackage, reg, name); err == nil {
			prefixes = append(prefixes, "package:"+reg+":"+c)
		}
	}
	if len(prefixes) == 0 {
		return nil, false, nil
	}
	ths, err := s.store.ThreatsByKeyPrefix(ctx, core.KeyPrefixQuery{Prefixes: prefixes, After: "", Limit: searchPrefixMax + 1 + len(exact)})
	if err != nil {
		return nil, false, err
	}
	for _, t := range ths {
		if !slices.ContainsFunc(exact, func(e core.Threat) bool { return e.ID == t.ID }) {
			out = append(out, t)
		}
	}
	if len(out) > searchPrefixMax {
		return out[:searchPrefixMax], true, nil
	}
	return out, false, nil
}

// checkURL is the check-malicious request for q (the path under the API's
// base path and its query).
func checkURL(base string, q core.CheckQuery, indicators bool) string {
	v := url.Values{"report_type": {string(q.ReportType)}, "resource_identifier": {q.ResourceIdentifier}}
	if q.Ecosystem != "" {
		v.Set("ecosystem", q.Ecosystem)
	}
	if q.Version != "" {
		v.Set("version", q.Version)
	}
	if indicators {
		v.Set("match", "indicators")
	}
	return base + "/check-malicious?" + v.Encode()
}
