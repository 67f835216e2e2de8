// Package feed is the paid tier's use cases (docs/api/paid.md): the
// /threat-feed poll of verified reports or of every published change in a
// time window, a publisher's reports, a report's full data, with signed
// cursors bound to their query and token, and the per-token usage counts.
// Pages are bounded by count and by bytes (core.FeedPage, core.ThreatPage).
package feed

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Limits are the anti-harvesting caps of the paid endpoints.
type Limits struct {
	MaxWindow time.Duration // longest since/until window
	PageMax   int           // largest page
}

// Service is the use-case layer of the paid endpoints.
type Service struct {
	store  core.Store
	limits Limits
	now    func() time.Time
	signer *core.Signer
}

// New returns the paid use cases.
func New(store core.Store, limits Limits) *Service {
	return &Service{store: store, limits: limits, now: time.Now, signer: core.NewSigner(store)}
}

// cursorTTL bounds how long a cursor may be used.
const cursorTTL = time.Hour

// cursor is the signed content of an opaque page cursor. It pins the query it
// was issued for (kind, parameters, window), the token that got it, and the
// keyset position; it cannot be edited to reach past the caps.
type cursor struct {
	Kind   string `json:"k"`
	Params string `json:"p"`
	From   int64  `json:"f,omitempty"`
	To     int64  `json:"t,omitempty"`
	At     int64  `json:"a"`
	ID     string `json:"i"`
	Seq    int64  `json:"s,omitempty"`
	Token  string `json:"o"`
	Exp    int64  `json:"e"`
}

func (p *Service) encode(ctx context.Context, c cursor) (string, error) {
	body, _ := json.Marshal(c)
	return p.signer.Sign(ctx, body)
}

func (p *Service) decode(ctx context.Context, s, kind, params, token string) (cursor, error) {
	bad := core.Invalid("cursor", "is not a cursor this query issued (a cursor is bound to its query and its token, and expires)")
	body, ok, err := p.signer.Open(ctx, s)
	if err != nil {
		return cursor{}, err
	}
	var c cursor
	if !ok || json.Unmarshal(body, &c) != nil || c.Kind != kind || c.Params != params || c.Token != token {
		return cursor{}, bad
	}
	if p.now().Unix() > c.Exp {
		return cursor{}, core.Invalid("cursor", "has expired: start again without a cursor")
	}
	return c, nil
}

// Page is one page of a paged endpoint.
type Page struct {
	Threats    []core.Threat
	NextCursor string // "" on the last page
	From, To   time.Time
	// Changes is the page of a changes-mode feed (Threats is then nil).
	Changes []core.FeedItem
}

// Request is a /threat-feed query as given (strings, to validate here).
type Request struct {
	Since, Until, Hours, Ecosystem, Cursor, Limit string
	// Mode is "" or "verified" (the reports that became visible in the
	// window and are still verified) or "changes" (every verification,
	// revision and withdrawal in the window).
	Mode string
}

// Feed modes.
const (
	ModeVerified = "verified"
	ModeChanges  = "changes"
)

func (p *Service) pageLimit(s string) (int, error) {
	if s == "" {
		return min(100, p.limits.PageMax), nil
	}
	return core.ParseWhole("limit", s, 1, p.limits.PageMax)
}

// Feed returns, oldest first and one page at a time, the reports that
// became visible here (verified by a reviewer, or imported) in a window, or
// in changes mode every change to what is published: since/until (RFC 3339,
// at most MaxWindow apart) or hours (1–24, default 1), optionally one
// ecosystem. Times are when the change happened here, not upstream
// publication times. A changes-mode feed without until always returns a
// cursor: polling with it yields every later change exactly once.
func (p *Service) Feed(ctx context.Context, who core.Principal, r Request) (Page, error) {
	limit, err := p.pageLimit(r.Limit)
	if err != nil {
		return Page{}, err
	}
	changes := false
	switch r.Mode {
	case "", ModeVerified:
	case ModeChanges:
		changes = true
	default:
		return Page{}, core.Invalid("mode", "must be %q or %q (got %q)", ModeVerified, ModeChanges, core.Shorten(r.Mode))
	}
	registry, err := core.ParseEcosystem(r.Ecosystem)
	if err != nil {
		return Page{}, err
	}
	params := strings.Join([]string{r.Since, r.Until, r.Hours, registry, r.Mode}, "|")
	// A changes feed without until follows the present: its end is now at
	// every call, and its cursor outlives the page.
	open := changes && r.Until == ""
	var from, to time.Time
	var after cursor
	if r.Cursor != "" {
		if after, err = p.decode(ctx, r.Cursor, "feed", params, who.Token.ID); err != nil {
			return Page{}, err
		}
		from, to = time.UnixMicro(after.From).UTC(), time.UnixMicro(after.To).UTC()
		if open {
			to = p.now().UTC()
		}
	} else if from, to, err = p.window(r); err != nil {
		return Page{}, err
	}
	q := core.FeedQuery{From: from, To: to, Registry: registry, Published: !changes}
	if after.Seq > 0 {
		q.AfterAt, q.AfterSeq = time.UnixMicro(after.At).UTC(), after.Seq
	}
	items, more, err := core.FeedPage(ctx, p.store, q, limit)
	if err != nil {
		return Page{}, err
	}
	out := Page{From: from, To: to}
	next := cursor{Kind: "feed", Params: params, From: from.UnixMicro(), To: to.UnixMicro(), Token: who.Token.ID,
		At: after.At, Seq: after.Seq, Exp: p.now().Add(cursorTTL).Unix()}
	if len(items) > 0 {
		last := items[len(items)-1].Event
		next.At, next.Seq = last.At.UnixMicro(), last.Seq
	} else if open && next.Seq == 0 {
		// Nothing yet: resume after the last change committed so far, so
		// that the next poll starts from here, not from the window's start.
		last, err := p.store.LastFeedEvent(ctx, to)
		if err != nil {
			return Page{}, err
		}
		if last.Seq > 0 {
			next.At, next.Seq = last.At.UnixMicro(), last.Seq
		}
	}
	if open {
		// A poller's cursor lives as long as the longest window.
		next.Exp = p.now().Add(max(p.limits.MaxWindow, cursorTTL)).Unix()
	}
	if more || open {
		if out.NextCursor, err = p.encode(ctx, next); err != nil {
			return Page{}, err
		}
	}
	if changes {
		out.Changes = items
		return out, nil
	}
	out.Threats = make([]core.Threat, len(items))
	for i, it := range items {
		out.Threats[i] = it.Threat
	}
	return out, nil
}

// window validates the feed's time window.
func (p *Service) window(r Request) (time.Time, time.Time, error) {
	return core.Window{Default: time.Hour, Max: p.limits.MaxWindow, Until: true}.Parse(p.now(), r.Since, r.Until, r.Hours)
}

// ByPublisher returns the verified reports whose publisher is username
// (case-insensitive, exact), most recently verified first.
func (p *Service) ByPublisher(ctx context.Context, who core.Principal, username, cur, limitStr string) (Page, error) {
	username = strings.TrimSpace(username)
	if username == "" {
		return Page{}, core.Invalid("username", "is required")
	}
	if err := core.ValidateText("username", username, 256); err != nil {
		return Page{}, err
	}
	limit, err := p.pageLimit(limitStr)
	if err != nil {
		return Page{}, err
	}
	params := strings.ToLower(username)
	q := core.ThreatQuery{Publisher: username, Descending: true}
	if cur != "" {
		c, err := p.decode(ctx, cur, "publisher", params, who.Token.ID)
		if err != nil {
			return Page{}, err
		}
		q.AfterVerifiedAt, q.AfterID = time.UnixMicro(c.At).UTC(), c.ID
	}
	return p.page(ctx, q, limit, cursor{Kind: "publisher", Params: params, Token: who.Token.ID}, time.Time{}, time.Time{})
}

func (p *Service) page(ctx context.Context, q core.ThreatQuery, limit int, next cursor, from, to time.Time) (Page, error) {
	threats, more, err := core.ThreatPage(ctx, p.store, q, limit)
	if err != nil {
		return Page{}, err
	}
	out := Page{Threats: threats, From: from, To: to}
	if more {
		last := threats[len(threats)-1]
		next.ID, next.Exp = last.ID, p.now().Add(cursorTTL).Unix()
		if last.VerifiedAt != nil {
			next.At = last.VerifiedAt.UnixMicro()
		}
		if out.NextCursor, err = p.encode(ctx, next); err != nil {
			return Page{}, err
		}
	}
	return out, nil
}

// ThreatData is a report (with its stored indicators, Threat.IOCs) and its
// history.
type ThreatData struct {
	Threat    core.Threat
	Revisions []core.Revision
	Events    []core.ReviewEvent
}

// Data returns the full record of a verified report (its submitter and
// reviewers also see pending and rejected ones); others get not found.
func (p *Service) Data(ctx context.Context, who core.Principal, id string) (ThreatData, error) {
	if _, err := uuid.Parse(id); err != nil {
		return ThreatData{}, core.Invalid("threat_id", "must be a UUID (got %q)", id)
	}
	t, err := p.store.GetThreat(ctx, id)
	if err != nil {
		return ThreatData{}, err
	}
	if t.Status != core.StatusVerified && !who.User.Role.CanReview() && (who.User.ID == "" || who.User.ID != t.SubmitterID) {
		return ThreatData{}, core.NotFound("threat", id)
	}
	revs, err := p.store.ListRevisions(ctx, id)
	if err != nil {
		return ThreatData{}, err
	}
	events, err := p.store.ReviewEvents(ctx, id)
	if err != nil {
		return ThreatData{}, err
	}
	return ThreatData{Threat: t, Revisions: revs, Events: events}, nil
}

// Usage counts paid calls per token, endpoint and day, flushing to storage
// in the background so no storage write sits on a request.
type Usage struct {
	store core.OperationsStore
	// flushing is held by a flush from taking the pending counts until
	// storage has them, and shared by Today's reads: a count on its way
	// to storage is then neither missed (taken from pending, not yet
	// stored) nor counted twice.
	flushing sync.RWMutex
	mu       sync.Mutex
	pending  map[core.UsageDelta]int64 // Calls field unused in the key
	now      func() time.Time
}

// NewUsage returns a usage counter over store.
func NewUsage(store core.OperationsStore) *Usage {
	return &Usage{store: store, pending: map[core.UsageDelta]int64{}, now: time.Now}
}

// Count records one paid call.
func (u *Usage) Count(tokenID, endpoint string) {
	k := core.UsageDelta{Day: u.now().UTC().Format(time.DateOnly), TokenID: tokenID, Endpoint: endpoint}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pending[k]++
}

// Flush writes the pending counts.
func (u *Usage) Flush(ctx context.Context) error {
	u.flushing.Lock()
	defer u.flushing.Unlock()
	u.mu.Lock()
	pending := u.pending
	u.pending = map[core.UsageDelta]int64{}
	u.mu.Unlock()
	var deltas []core.UsageDelta
	for k, n := range pending {
		k.Calls = n
		deltas = append(deltas, k)
	}
	if err := u.store.AddUsage(ctx, deltas); err != nil {
		u.mu.Lock()
		for k, n := range pending {
			u.pending[k] += n
		}
		u.mu.Unlock()
		return err
	}
	return nil
}

// Today returns a token's paid calls today (stored plus pending).
func (u *Usage) Today(ctx context.Context, tokenID string) (map[string]int64, error) {
	u.flushing.RLock()
	defer u.flushing.RUnlock()
	day := u.now().UTC().Format(time.DateOnly)
	stored, err := u.store.Usage(ctx, core.UsageQuery{TokenID: tokenID, Day: day})
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(stored))
	for k, n := range stored {
		out[k] = n
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, n := range u.pending {
		if k.TokenID == tokenID && k.Day == day {
			out[k.Endpoint] += n
		}
	}
	return out, nil
}
