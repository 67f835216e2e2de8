package blocklist

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threatd/threatd/core"
)

// Store is where the lists are read from.
type Store interface {
	QueryThreats(ctx context.Context, q core.ThreatQuery) ([]core.Threat, error)
	LastFeedEvent(ctx context.Context, to time.Time) (core.FeedEvent, error)
	RuleIDs(ctx context.Context, q core.RuleIDQuery) ([]core.RuleID, error)
}

// fillPage is how many verified reports the first read takes at once.
const fillPage = 1000

// ErrFilling: the lists are not complete yet (the first read of every
// verified report is under way); a partial list is never served.
var ErrFilling = errors.New("the block lists are being built")

// Service keeps the lists for a daemon: read once from every verified
// report, then changed with each report the change feed brings (Apply),
// each format rendered when it is asked for after a change and kept.
type Service struct {
	store Store
	zone  string
	set   *Set

	filled atomic.Bool
	read   atomic.Int64
	// While filling: the reports Apply saw, with their version, so that
	// the first read (older) does not undo them.
	mu      sync.Mutex
	applied map[string]int

	cache sync.Map // format → *rendering

	// The Suricata rules, rendered when asked for after a change.
	sidBase   int64
	rules     sync.Mutex
	ruleState ruleState
}

// rendering is one format as last rendered.
type rendering struct {
	mu   sync.Mutex
	gen  uint64
	mark time.Time
	body []byte
	etag string
}

// NewService is an empty service over store, its RPZ zone named zone
// ("" for DefaultZone): Fill fills it.
func NewService(store Store, zone string) *Service {
	if zone == "" {
		zone = DefaultZone
	}
	return &Service{store: store, zone: zone, set: NewSet(), applied: map[string]int{}, sidBase: DefaultSIDBase}
}

// SetSIDBase sets the Suricata rules' first sid (DefaultSIDBase unless
// set), before the service is used.
func (s *Service) SetSIDBase(base int64) {
	if base > 0 {
		s.sidBase = base
	}
}

// Fill reads every verified report once, in verification order.
func (s *Service) Fill(ctx context.Context) error {
	q := core.ThreatQuery{Limit: fillPage, IOCsOnly: true}
	for {
		page, err := s.store.QueryThreats(ctx, q)
		if err != nil {
			return err
		}
		s.Offer(page)
		if len(page) < fillPage {
			break
		}
		last := page[len(page)-1]
		if last.VerifiedAt == nil {
			return fmt.Errorf("verified report %s has no verification time", last.ID)
		}
		q.AfterVerifiedAt, q.AfterID = *last.VerifiedAt, last.ID
	}
	s.Complete()
	return nil
}

// Offer takes reports read in a pass over every verified report: Fill's
// own, or another that reads them all anyway (the index spill's fill,
// whose reads then build the lists too, and Fill is not run). Only the
// verified ones count, and only when the change feed has not brought a
// newer version of them meanwhile (Apply); a report offered twice is put
// once (and counted as read twice). Once the lists are complete the change
// feed keeps them, and offers are ignored.
func (s *Service) Offer(ts []core.Threat) {
	s.mu.Lock()
	if s.filled.Load() {
		s.mu.Unlock()
		return
	}
	n := 0
	for _, t := range ts {
		if t.Status != core.StatusVerified {
			continue
		}
		if v, ok := s.applied[t.ID]; ok && v >= t.Version {
			continue
		}
		s.set.Put(t.ID, t.Version, Of(t))
		n++
	}
	s.mu.Unlock()
	s.read.Add(int64(n))
}

// Complete marks the lists complete once a pass has offered every
// verified report: they are served from then on.
func (s *Service) Complete() {
	s.mu.Lock()
	s.applied = nil
	s.filled.Store(true)
	s.mu.Unlock()
}

// Filled says whether the lists are complete, and how many reports the
// first read has read.
func (s *Service) Filled() (bool, int64) { return s.filled.Load(), s.read.Load() }

// ReportsChanged hears of a batch of the change feed (the follower's
// subscriber): each published change's report, as now stored with its
// stored indicators, changes the lists and the rules.
func (s *Service) ReportsChanged(b core.ChangeBatch) {
	if len(b.Published) == 0 {
		return
	}
	ts := make([]core.Threat, len(b.Published))
	for i, it := range b.Published {
		ts[i] = it.Threat
	}
	s.Apply(ts)
}

// Apply changes the lists for reports as they are now stored (a
// verification, a revision, a withdrawal), each with its stored
// indicators: nothing here derives them again.
func (s *Service) Apply(ts []core.Threat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range ts {
		if s.applied != nil {
			s.applied[t.ID] = max(s.applied[t.ID], t.Version)
		}
		if t.Status != core.StatusVerified {
			s.set.Remove(t.ID)
			continue
		}
		s.set.Put(t.ID, t.Version, Of(t))
	}
}

// Serial is the RPZ zone's serial for the state the store is in: the
// time of its latest published change, in seconds (a published change
// comes after the last, so the serial never goes back).
func Serial(ctx context.Context, store Store) (uint32, error) {
	ev, err := store.LastFeedEvent(ctx, time.Now().Add(24*time.Hour))
	if err != nil {
		return 0, err
	}
	if ev.At.IsZero() {
		return 1, nil
	}
	return uint32(ev.At.Unix()), nil
}

// List is one format as the lists are now, and its ETag. A format is
// rendered again only after a name or address joined or left the lists
// (and RPZ also after any published change: its serial).
func (s *Service) List(ctx context.Context, format string) (body []byte, etag string, err error) {
	if err := CheckFormat(format); err != nil {
		return nil, "", err
	}
	if !s.filled.Load() {
		return nil, "", ErrFilling
	}
	var mark time.Time
	if format == RPZ {
		ev, err := s.store.LastFeedEvent(ctx, time.Now().Add(24*time.Hour))
		if err != nil {
			return nil, "", err
		}
		mark = ev.At
	}
	v, _ := s.cache.LoadOrStore(format, &rendering{})
	r := v.(*rendering)
	r.mu.Lock()
	defer r.mu.Unlock()
	gen := s.set.Generation()
	if r.body != nil && r.gen == gen && r.mark.Equal(mark) {
		return r.body, r.etag, nil
	}
	domains, ips, gen := s.set.Snapshot()
	m := Meta{Zone: s.zone, Serial: 1}
	if !mark.IsZero() {
		m.Serial = uint32(mark.Unix())
	}
	var b bytes.Buffer
	if err := Render(&b, format, domains, ips, m); err != nil {
		return nil, "", err
	}
	r.body, r.gen, r.mark, r.etag = b.Bytes(), gen, mark, etagOf(b.Bytes())
	return r.body, r.etag, nil
}

// Export writes one format of the lists as they are in store now, the
// same bytes a daemon on it serves: every verified report read once.
func Export(ctx context.Context, store Store, zone, format string) ([]byte, error) {
	if err := CheckFormat(format); err != nil {
		return nil, err
	}
	s := NewService(store, zone)
	if err := s.Fill(ctx); err != nil {
		return nil, err
	}
	body, _, err := s.List(ctx, format)
	return body, err
}

// Len is the number of domains and of addresses on the lists now.
func (s *Service) Len() (domains, ips int) { return s.set.Len() }

// etagOf is the ETag of a rendering: a hash of its bytes, quoted.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return fmt.Sprintf("%q", hex.EncodeToString(sum[:16]))
}
