package firewall

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threatd/threatd/core/community"
)

// DecisionJSON is a decision as the API, the CLI and webhook events show
// it (docs/firewall.md).
type DecisionJSON struct {
	Time      string   `json:"time"`
	Ecosystem string   `json:"ecosystem"`
	Name      string   `json:"name"`
	Version   string   `json:"version"`
	Purl      string   `json:"purl"`
	Rule      string   `json:"rule"`
	Action    string   `json:"action"`
	ThreatIDs []string `json:"threat_ids"`
	Until     *string  `json:"until"`
	User      string   `json:"user"`
	ClientIP  string   `json:"client_ip"`
}

// ShowDecision is d as DecisionJSON.
func ShowDecision(d FirewallDecision) DecisionJSON {
	out := DecisionJSON{Time: d.Time.UTC().Format(time.RFC3339Nano), Ecosystem: d.Ecosystem, Name: d.Name, Version: d.Version,
		Purl: d.Purl, Rule: d.Rule, Action: d.Action, ThreatIDs: d.ThreatIDs, User: d.User, ClientIP: d.ClientIP}
	if out.ThreatIDs == nil {
		out.ThreatIDs = []string{}
	}
	if !d.Until.IsZero() {
		u := d.Until.UTC().Format(time.RFC3339)
		out.Until = &u
	}
	return out
}

// Recorder records decisions and held versions off the request path:
// requests hand them over (Decide, Held) and a background loop writes them
// in batches (one storage call for up to batchMax of them, at least every
// flushEvery), so that recording never slows an install. It also keeps
// when each version without a publish time was first seen.
type Recorder struct {
	store FirewallStore
	log   *slog.Logger
	// Counted, when set, counts each decision (metrics); Dropped each one
	// not recorded because the queue was full.
	Counted func(ecosystem, rule, action string)
	Dropped func()
	// Sink, when set (before the first decision), is handed each decision
	// as it is written, its event body made (the SIEM's messages); it must
	// not wait.
	Sink func(FirewallDecision)

	// The queues hold pointers: a channel's buffer is allocated whole, and
	// 65,536 values would hold 25 MB from start-up whether or not any
	// decision is waiting.
	in   chan *FirewallDecision
	held chan *HeldVersion

	mu        sync.Mutex
	firstSeen map[string]time.Time
	heldSeen  map[string]time.Time // the until last recorded, per version

	// Seen counts the reports of malicious decisions as seen sightings
	// (nil: not counted).
	Seen *community.Seen

	keep    time.Duration
	dropped atomic.Int64
	done    chan struct{}
}

// Wait waits, up to limit, until the recorder wrote what it was handed
// before its context ended.
func (r *Recorder) Wait(limit time.Duration) {
	if r == nil {
		return
	}
	select {
	case <-r.done:
	case <-time.After(limit):
	}
}

// trim removes the decisions older than keep.
func (r *Recorder) trim(ctx context.Context) {
	if r.keep <= 0 {
		return
	}
	n, err := r.store.TrimDecisions(ctx, time.Now().Add(-r.keep))
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("firewall: removing old decisions failed", "error", err.Error())
		}
		return
	}
	if n > 0 {
		r.log.Info("firewall: removed old decisions", "count", n, "keep", r.keep.String())
	}
}

// Bounds of the recorder: decisions waiting (a burst of 2,000 blocked
// requests a second for 30 s waits in memory while storage is slow), and a
// batch.
const (
	recorderQueue = 1 << 16
	batchMax      = 2000
	flushEvery    = 250 * time.Millisecond
)

// NewRecorder starts a recorder writing to store until ctx ends; it
// removes decisions older than keep every hour.
func NewRecorder(ctx context.Context, store FirewallStore, keep time.Duration, log *slog.Logger) *Recorder {
	r := &Recorder{store: store, log: log, keep: keep, in: make(chan *FirewallDecision, recorderQueue), held: make(chan *HeldVersion, recorderQueue),
		firstSeen: map[string]time.Time{}, heldSeen: map[string]time.Time{}, done: make(chan struct{})}
	go r.load(ctx) // off the start-up path: a first sighting made meanwhile keeps the earlier time
	go r.run(ctx)
	return r
}

// load reads when the versions held now were first seen.
func (r *Recorder) load(ctx context.Context) {
	q := HeldQuery{Now: time.Now(), Limit: 1000}
	for range 100 {
		page, err := r.store.ListHeld(ctx, q)
		if err != nil {
			r.log.Warn("firewall: reading the held versions failed", "error", err.Error())
			return
		}
		r.mu.Lock()
		for _, h := range page {
			k := h.Ecosystem + "\x00" + h.Name + "\x00" + h.Version
			if t, ok := r.firstSeen[k]; !ok || h.FirstSeen.Before(t) {
				r.firstSeen[k] = h.FirstSeen
			}
			if _, ok := r.heldSeen[k]; !ok {
				r.heldSeen[k] = h.Until
			}
		}
		r.mu.Unlock()
		if len(page) < q.Limit {
			return
		}
		q.After = page[len(page)-1].Cursor()
	}
}

// FirstSeen is when the firewall first saw a version (now, the first
// time it is asked).
func (r *Recorder) FirstSeen(ecosystem, name, version string, now time.Time) time.Time {
	if r == nil {
		return now
	}
	k := ecosystem + "\x00" + name + "\x00" + version
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.firstSeen[k]; ok {
		return t
	}
	if len(r.firstSeen) >= maxSeen {
		evictHalf(r.firstSeen)
	}
	r.firstSeen[k] = now
	return now
}

// maxSeen bounds the versions a recorder remembers (first sightings, holds
// recorded): about 100 MB at most.
const maxSeen = 1 << 20

// evictHalf forgets about half of m (map order is random). A version
// forgotten is seen anew: without a publish time it is held from then on
// (longer, never shorter, than it would have been), and its hold is
// recorded again (an upsert).
func evictHalf[V any](m map[string]V) {
	n := len(m) / 2
	for k := range m {
		if n == 0 {
			return
		}
		delete(m, k)
		n--
	}
}

// Decide hands a decision over; it is written within flushEvery.
func (r *Recorder) Decide(d FirewallDecision) {
	if r == nil {
		return
	}
	if r.Counted != nil {
		r.Counted(d.Ecosystem, d.Rule, d.Action)
	}
	if d.Rule == RuleMalicious && d.Action != ActionWaived {
		// A reported version met at the firewall is a seen sighting.
		r.Seen.Add(d.ThreatIDs, community.SightingSourceFirewall, d.Time)
	}
	if d.Action == ActionBlock || d.Action == ActionWarn {
		d.EventType = EventFirewallBlocked
		if d.Action == ActionWarn {
			d.EventType = EventFirewallWarned
		}
	}
	select {
	case r.in <- &d:
	default:
		// Storage is far behind: the decision is counted and logged,
		// never allowed to hold the install.
		if r.Dropped != nil {
			r.Dropped()
		}
		if r.dropped.Add(1)%1000 == 1 {
			r.log.Warn("firewall: decisions are arriving faster than storage takes them; some were not recorded", "dropped", r.dropped.Load())
		}
	}
}

// Held hands over a version seen held; each is written once per hold.
func (r *Recorder) Held(h HeldVersion) {
	if r == nil {
		return
	}
	k := h.Ecosystem + "\x00" + h.Name + "\x00" + h.Version
	r.mu.Lock()
	if r.heldSeen[k].Equal(h.Until) {
		r.mu.Unlock()
		return
	}
	if len(r.heldSeen) >= maxSeen {
		evictHalf(r.heldSeen)
	}
	r.heldSeen[k] = h.Until
	if t, ok := r.firstSeen[k]; ok {
		h.FirstSeen = t
	}
	r.mu.Unlock()
	select {
	case r.held <- &h:
	default:
		// Storage is far behind: recorded at its next sighting instead.
		r.mu.Lock()
		delete(r.heldSeen, k)
		r.mu.Unlock()
	}
}

func (r *Recorder) run(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	trim := time.NewTicker(time.Hour)
	defer trim.Stop()
	r.trim(ctx)
	var ds []FirewallDecision
	var hs []HeldVersion
	flush := func() {
		wctx := context.WithoutCancel(ctx)
		if len(ds) > 0 {
			// The events' bodies are made here, off the requests.
			for i := range ds {
				if ds[i].EventType != "" {
					ds[i].Event, _ = json.Marshal(struct {
						Type      string       `json:"type"`
						Timestamp string       `json:"timestamp"`
						Data      DecisionJSON `json:"data"`
					}{ds[i].EventType, ds[i].Time.UTC().Format(time.RFC3339Nano), ShowDecision(ds[i])})
				}
			}
			if r.Sink != nil {
				for _, d := range ds {
					r.Sink(d)
				}
			}
			if err := r.store.RecordDecisions(wctx, ds); err != nil {
				r.log.Warn("firewall: recording decisions failed", "count", len(ds), "error", err.Error())
			}
			ds = ds[:0]
		}
		if len(hs) > 0 {
			if err := r.store.RecordHeld(wctx, hs); err != nil {
				r.log.Warn("firewall: recording held versions failed", "count", len(hs), "error", err.Error())
			}
			hs = hs[:0]
		}
	}
	for {
		select {
		case <-ctx.Done():
			// What was handed over is written before the daemon stops.
			for {
				select {
				case d := <-r.in:
					ds = append(ds, *d)
					continue
				case h := <-r.held:
					hs = append(hs, *h)
					continue
				default:
				}
				break
			}
			flush()
			return
		case d := <-r.in:
			ds = append(ds, *d)
			if len(ds) >= batchMax {
				flush()
			}
		case h := <-r.held:
			hs = append(hs, *h)
			if len(hs) >= batchMax {
				flush()
			}
		case <-tick.C:
			flush()
		case <-trim.C:
			r.trim(ctx)
		}
	}
}

// WaiverCache holds the waivers in force, read from storage every
// freshness (a waiver made on another daemon applies here within it) and
// at once after a change made here. A request reads it without a storage
// call.
type WaiverCache struct {
	store     FirewallStore
	log       *slog.Logger
	freshness time.Duration
	cur       atomic.Pointer[Waivers]
}

// NewWaiverCache reads the waivers and refreshes them until ctx ends.
func NewWaiverCache(ctx context.Context, store FirewallStore, freshness time.Duration, log *slog.Logger) *WaiverCache {
	c := &WaiverCache{store: store, log: log, freshness: max(freshness, 100*time.Millisecond)}
	c.cur.Store(NewWaivers(nil))
	c.Refresh(ctx)
	go func() {
		t := time.NewTicker(c.freshness)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c.Refresh(ctx)
			}
		}
	}()
	return c
}

// Refresh reads the waivers in force now.
func (c *WaiverCache) Refresh(ctx context.Context) {
	ws, err := c.store.ListWaivers(ctx, time.Now())
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("firewall: reading waivers failed; the last ones read stay in force", "error", err.Error())
		}
		return
	}
	next := NewWaivers(ws)
	if c.cur.Load().Generation != next.Generation {
		c.cur.Store(next)
	}
}

// Current is the waivers in force (nil-safe).
func (c *WaiverCache) Current() *Waivers {
	if c == nil {
		return nil
	}
	return c.cur.Load()
}
