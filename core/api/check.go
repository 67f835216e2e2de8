package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/ioc"
	"github.com/threatd/threatd/core/record"
)

// checkResult is spec §4.3's check result.
type checkResult struct {
	Malicious          bool    `json:"malicious"`
	ReportType         string  `json:"report_type"`
	ResourceIdentifier string  `json:"resource_identifier"`
	Ecosystem          *string `json:"ecosystem"`
	ThreatCount        int     `json:"threat_count"`
	Details            any     `json:"details,omitempty"`
	Message            string  `json:"message,omitempty"`
	// MatchedAs is "report" or "indicator", with match=indicators only.
	MatchedAs string `json:"matched_as,omitempty"`
	// entry holds the spill entry Details splices in: the single check
	// gives it back once its answer is written.
	entry index.Entry
}

// checkIndicators is match=indicators after a check found no report of
// its own: the verified reports that name the resource as an indicator of
// compromise (docs/api/check-malicious.md, "Indicators"), counted in full.
func (s *Server) checkIndicators(ctx context.Context, q core.CheckQuery, out *checkResult, viewer core.Principal) error {
	if out.Malicious {
		out.MatchedAs = "report"
		return nil
	}
	typ, value, ok := core.CheckIndicator(q)
	if !ok {
		return nil
	}
	tq := core.ThreatQuery{IndicatorKey: ioc.Key(typ, value), Descending: true, Limit: 1}
	latest, err := s.store.QueryThreats(ctx, tq)
	if err != nil || len(latest) == 0 {
		return err
	}
	n, err := s.store.CountThreats(ctx, tq)
	if err != nil {
		return err
	}
	out.Malicious, out.MatchedAs, out.ThreatCount = true, "indicator", int(n)
	out.Details = s.toRecord(latest[0], viewer)
	out.Message = fmt.Sprintf("%s %q is named as an indicator of compromise in %s", q.ReportType, q.ResourceIdentifier,
		core.Count(int(n), "verified report", "verified reports"))
	return nil
}

// check answers one resolved query from the index: with the latest
// report's record from the index's spill when it holds it and viewer sees
// the record as everyone does, else with the report itself.
func (s *Server) check(ctx context.Context, q core.CheckQuery, viewer core.Principal) (checkResult, error) {
	res, err := s.index.CheckQuery(ctx, q)
	if err != nil {
		return checkResult{}, err
	}
	out := checkResult{ReportType: string(q.ReportType), ResourceIdentifier: q.ResourceIdentifier, ThreatCount: res.Count}
	// The ecosystem is copied: pointing into q or res moved each of them
	// to the heap, a report's whole result (Latest) with res, on every
	// check.
	switch {
	case q.Ecosystem != "":
		eco := q.Ecosystem
		out.Ecosystem = &eco
	case res.Count > 0 && res.Registry != "":
		eco := res.Registry
		out.Ecosystem = &eco
	}
	if res.Count == 0 {
		out.Message = notInDatabase(q)
		return out, nil
	}
	out.Malicious = true
	if res.Answer != nil && !(res.Contact && core.ContactVisibleTo(res.Submitter, viewer)) {
		out.Details = splicedRecord{base: res.Answer, community: s.opts.Community.Of(res.ID, res.Submitter)}
		out.entry = res.Entry
		return out, nil
	}
	t := res.Latest
	if res.Answer != nil {
		res.Entry.Release()
		// The answer leaves out a contact e-mail this viewer may see.
		if t, err = s.index.Record(ctx, res.ID); err != nil {
			return checkResult{}, err
		}
	}
	out.Details = s.toRecord(t, viewer)
	return out, nil
}

// notInDatabase is a miss's message.
func notInDatabase(q core.CheckQuery) string {
	return string(q.ReportType) + " " + strconv.Quote(q.ResourceIdentifier) + " is not in the threat database"
}

// checkParams are GET /check-malicious's parameters, in the order
// checkOne reads them.
var checkParams = [...]string{"report_type", "resource_identifier", "ecosystem", "version", "purl", "match"}

// checkOne is GET /check-malicious.
func (s *Server) checkOne(c *echo.Context) error {
	var args [len(checkParams)]string
	if err := knownParams(c.Request().URL.RawQuery, checkParams[:], args[:]); err != nil {
		return err
	}
	q, err := core.CheckRequest{ReportType: args[0], ResourceIdentifier: args[1],
		Ecosystem: args[2], Version: args[3], Purl: args[4]}.Resolve()
	if err != nil {
		return err
	}
	match := args[5]
	if match != "" && match != "indicators" {
		return core.Invalid("match", "must be indicators (or absent: reports only), not %q", match)
	}
	res, err := s.check(c.Request().Context(), q, principal(c))
	if err != nil {
		return err
	}
	if match == "indicators" {
		if err := s.checkIndicators(c.Request().Context(), q, &res, principal(c)); err != nil {
			return err
		}
	}
	buf := answerBufs.Get().(*[]byte)
	b, err := res.appendJSON((*buf)[:0])
	// The answer holds a copy of the record now.
	res.entry.Release()
	if err != nil {
		return err
	}
	// The header's value is a slice shared by every answer (echo's Set
	// made one per request); net/http only reads it.
	c.Response().Header()[echo.HeaderContentType] = jsonContentType
	b = append(b, '\n')
	err = c.JSONBlob(http.StatusOK, b)
	// Written: the response copied the bytes (a Write keeps none).
	if cap(b) <= answerBufMax {
		*buf = b[:0]
		answerBufs.Put(buf)
	}
	return err
}

// answerBufs holds the buffers check answers are written into: an
// answer with a record (about 1.6 KB) was allocated twice, the record
// spliced and then the answer around it, for every hit.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// answerBufMax is the largest buffer answerBufs keeps.
const answerBufMax = 64 << 10

// splicedRecord is a check's details read from the index's spill: the
// record's JSON and what the community says of it, joined as they are
// written (record.AppendSplice).
type splicedRecord struct {
	base      []byte
	community core.Community
}

// MarshalJSON writes the record (a batch's answers go through
// encoding/json).
func (r splicedRecord) MarshalJSON() ([]byte, error) { return record.Splice(r.base, r.community), nil }

// jsonContentType is the Content-Type of check answers, as JSONBlob sets it.
var jsonContentType = []string{echo.MIMEApplicationJSON}

// appendJSON writes r as encoding/json writes it, byte for byte (HTML
// escaping on, as echo's JSON answers), without its reflection; a record
// read from the index's spill is spliced in as it is (json.Marshal's
// bytes, record.AppendSplice). A check answer is written for every
// request of the hot path.
func (r checkResult) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"malicious":`...)
	b = strconv.AppendBool(b, r.Malicious)
	b = append(b, `,"report_type":`...)
	b = core.AppendJSONString(b, r.ReportType)
	b = append(b, `,"resource_identifier":`...)
	b = core.AppendJSONString(b, r.ResourceIdentifier)
	b = append(b, `,"ecosystem":`...)
	if r.Ecosystem == nil {
		b = append(b, "null"...)
	} else {
		b = core.AppendJSONString(b, *r.Ecosystem)
	}
	b = append(b, `,"threat_count":`...)
	b = strconv.AppendInt(b, int64(r.ThreatCount), 10)
	if r.Details != nil {
		b = append(b, `,"details":`...)
		if sr, ok := r.Details.(splicedRecord); ok {
			b = record.AppendSplice(b, sr.base, sr.community)
		} else {
			d, err := json.Marshal(r.Details)
			if err != nil {
				return b, err
			}
			b = append(b, d...)
		}
	}
	if r.Message != "" {
		b = append(b, `,"message":`...)
		b = core.AppendJSONString(b, r.Message)
	}
	if r.MatchedAs != "" {
		b = append(b, `,"matched_as":`...)
		b = core.AppendJSONString(b, r.MatchedAs)
	}
	return append(b, '}'), nil
}

// batchEntry is one result of a batch: a check result or {index, error}.
type batchError struct {
	Index int    `json:"index"`
	Error string `json:"error"`
}

// batchWorkers bounds the concurrent checks of one batch.
const batchWorkers = 32

// checkBatch is POST /check-malicious: up to batch_max queries, each 100
// counting as one request toward the per-token limit.
func (s *Server) checkBatch(c *echo.Context) error {
	var body struct {
		Queries []map[string]any `json:"queries"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := s.chargeBatch(c, body.Queries == nil, len(body.Queries)); err != nil {
		return err
	}
	viewer := principal(c)
	ctx := c.Request().Context()
	results := make([]any, len(body.Queries))
	errs := make([]error, len(body.Queries))
	// Checks run on up to batchWorkers goroutines: a hit on a report
	// outside the record cache waits for storage, and concurrent waits are
	// coalesced into one GetThreats call instead of one round trip each.
	var wg sync.WaitGroup
	sem := make(chan struct{}, batchWorkers)
	for i, raw := range body.Queries {
		q, err := batchQuery(raw)
		var cq core.CheckQuery
		if err == nil {
			cq, err = q.Resolve()
		}
		if err != nil {
			errs[i] = err
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i], errs[i] = s.check(ctx, cq, viewer)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		e := toHTTPError(err, s.opts.MaxBodyBytes)
		if e.Status >= 500 {
			return err
		}
		results[i] = batchError{Index: i, Error: e.Message}
	}
	return c.JSON(http.StatusOK, map[string]any{"results": results})
}

// chargeBatch checks a batch's size (queries is required, at most
// batch_max) and counts each further 100 queries as one more request
// toward the per-token limit (the middleware counted the first).
func (s *Server) chargeBatch(c *echo.Context, missing bool, n int) error {
	if missing {
		return core.Invalid("queries", "is required: an array of queries")
	}
	if n > s.opts.BatchMax {
		return core.Invalid("queries", "has %d queries; at most %d are allowed in one request", n, s.opts.BatchMax)
	}
	if extra := (n+99)/100 - 1; extra > 0 {
		return s.chargeToken(c, extra, " (a batch counts one request per 100 queries)")
	}
	return nil
}

// batchQuery reads one batch entry strictly: known string fields only.
func batchQuery(raw map[string]any) (core.CheckRequest, error) {
	var q core.CheckRequest
	for k, v := range raw {
		if !slices.Contains(checkParams[:], k) {
			return q, core.Invalid(k, "is not a known field of a query")
		}
		str, ok := v.(string)
		if !ok && v != nil {
			return q, core.Invalid(k, "must be a string")
		}
		switch k {
		case "report_type":
			q.ReportType = str
		case "resource_identifier":
			q.ResourceIdentifier = str
		case "ecosystem":
			q.Ecosystem = str
		case "version":
			q.Version = str
		case "purl":
			q.Purl = str
		}
	}
	return q, nil
}

// onlyParams refuses query parameters outside allowed (a typo would
// otherwise silently widen a query).
func onlyParams(qs url.Values, allowed []string) error {
	for k, v := range qs {
		if !slices.Contains(allowed, k) {
			return core.Invalid(k, "is not a known parameter (known: %s)", strings.Join(allowed, ", "))
		}
		if len(v) > 1 {
			return core.Invalid(k, "is given more than once")
		}
	}
	return nil
}
