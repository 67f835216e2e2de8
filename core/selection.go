package core

import (
	"context"
	"strconv"
	"time"
)

// Selections of an export (exporter_routes' select, docs/plugins/exporters.md).
const (
	// SelectLatest is the query-latest selection: the latest verified
	// reports (report_type, ecosystem, severity_level).
	SelectLatest = "latest"
	// SelectWindow is every report that changed here in a rolling window of
	// at most 24 hours (since or hours, ecosystem), as it is now: verified,
	// revised, or withdrawn (rejected, for the exporter to revoke).
	SelectWindow = "window"
	// SelectAll is every verified report (optionally one ecosystem's),
	// streamed in pages: no size cap.
	SelectAll = "all"
)

// Caps of the selections.
const (
	// MaxWindowRecords and MaxWindowBytes (report text, ApproxSize) cap a
	// rolling-window selection: a larger window is refused, never cut.
	MaxWindowRecords = 10_000
	MaxWindowBytes   = 64 << 20
	// MaxRevocations caps the withdrawals added to a latest selection.
	MaxRevocations = 100
	// allPage is how many reports a full selection reads at a time (fewer
	// when they are large: PageBytes).
	allPage = 500
)

// Selections picks the records of exports from storage.
type Selections struct {
	store PublishedStore
	now   func() time.Time
}

// NewSelections returns the export selections over store.
func NewSelections(store PublishedStore) *Selections { return &Selections{store: store, now: time.Now} }

// ParseWhole parses a whole number from min to max given as text (a query
// parameter): "7", not "07", "+7", "7.0" or " 7".
func ParseWhole(field, s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(n) != s || n < lo || n > hi {
		return 0, Invalid(field, "must be a whole number from %d to %d", lo, hi)
	}
	return n, nil
}

// ParseEcosystem parses an optional ecosystem parameter ("" = all).
func ParseEcosystem(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	return ParseRegistry("ecosystem", s)
}

// exportWindow is the window of the STIX and Anomali window exports.
var exportWindow = Window{Default: 24 * time.Hour, Max: 24 * time.Hour}

// Window is every report that changed here in the rolling window since
// (RFC 3339, at most 24 h ago) or hours (1–24, default 24), optionally one
// ecosystem's, once each as it is now, in the order of its first change in
// the window: a revised one with its new content, a withdrawn one rejected. Times are when
// the change happened here (verified, imported, revised, withdrawn), not
// upstream publication times. At most MaxWindowRecords.
func (x *Selections) Window(ctx context.Context, since, hours, ecosystem string) ([]Threat, error) {
	from, now, err := exportWindow.Parse(x.now(), since, "", hours)
	if err != nil {
		return nil, err
	}
	registry, err := ParseEcosystem(ecosystem)
	if err != nil {
		return nil, err
	}
	var out []Threat
	at := map[string]int{}
	bytes := 0
	q := FeedQuery{From: from, To: now.Add(time.Second), Registry: registry}
	for more := true; more; {
		var page []FeedItem
		page, more, err = FeedPage(ctx, x.store, q, MaxWindowRecords)
		if err != nil {
			return nil, err
		}
		if len(page) > 0 {
			// Resume after the page's last item (read may have read past it).
			last := page[len(page)-1].Event
			q.AfterAt, q.AfterSeq = last.At, last.Seq
		}
		for _, it := range page {
			if i, ok := at[it.Threat.ID]; ok {
				bytes += it.Threat.ApproxSize() - out[i].ApproxSize()
				out[i] = it.Threat
				continue
			}
			at[it.Threat.ID] = len(out)
			out = append(out, it.Threat)
			bytes += it.Threat.ApproxSize()
		}
		// Refused whole rather than cut: an export that quietly left out
		// reports would look complete.
		if len(out) > MaxWindowRecords || bytes > MaxWindowBytes {
			return nil, Invalid("since", "the window holds more than %d reports or %d MiB of report text, more than one export carries: "+
				"choose a shorter window (since, hours) or one ecosystem, or read everything page by page (GET /threat-feed, TAXII)",
				MaxWindowRecords, MaxWindowBytes>>20)
		}
	}
	return out, nil
}

// Withdrawals returns the reports withdrawn in the last 24 hours (at most
// MaxRevocations, optionally one ecosystem's), as they are now: a latest
// selection adds them so that a STIX consumer revokes their objects.
func (x *Selections) Withdrawals(ctx context.Context, ecosystem string) ([]Threat, error) {
	registry, err := ParseEcosystem(ecosystem)
	if err != nil {
		return nil, err
	}
	now := x.now().UTC()
	items, err := x.store.Feed(ctx, FeedQuery{From: now.Add(-24 * time.Hour), To: now.Add(time.Second), Registry: registry,
		Kind: ChangeWithdrawn, Limit: MaxRevocations})
	if err != nil {
		return nil, err
	}
	var out []Threat
	seen := map[string]bool{}
	for _, it := range items {
		if it.Threat.Status == StatusRejected && !seen[it.Threat.ID] {
			seen[it.Threat.ID] = true
			out = append(out, it.Threat)
		}
	}
	return out, nil
}

// All checks an all-reports selection (ecosystem) and returns the stream of
// every verified report, oldest first, read from storage a page at a time.
func (x *Selections) All(ctx context.Context, ecosystem string) (func(yield func(Threat) error) error, error) {
	registry, err := ParseEcosystem(ecosystem)
	if err != nil {
		return nil, err
	}
	return func(yield func(Threat) error) error {
		q := ThreatQuery{Registry: registry}
		for more := true; more; {
			var page []Threat
			var err error
			page, more, err = ThreatPage(ctx, x.store, q, allPage)
			if err != nil {
				return err
			}
			if len(page) > 0 {
				// Resume after the page's last report (read may have read past it).
				last := page[len(page)-1]
				q.AfterVerifiedAt, q.AfterID = timeOr(last.VerifiedAt), last.ID
			}
			for _, t := range page {
				if err := yield(t); err != nil {
					return err
				}
			}
		}
		return nil
	}, nil
}
