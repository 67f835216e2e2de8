// Package community is the community signals of verified reports, one
// feature: people's and the daemon's own sightings (seen.go, sightings.go),
// each daemon's view of their counts, from which a record's confidence
// follows (this file, docs/api/records.md, "Community signals"), campaigns
// and their suggestions (campaigns.go, suggest.go, text.go), submitters'
// profiles, one read model for the web site and the API (profiles.go),
// and the reputation and dispute rules (reputation.go); its types and
// stores in types_*.go.
// Records are rendered with it as they are answered, so that a sighting
// never rewrites a report or the index's copy of its record.
//
// A View loads every report's counts once, then reads those changed since
// its last look (storage keeps when each report's counts changed), so that
// the daemons sharing a database see each other's sightings within a
// poll. Each look reads only what changed after the last change it read;
// every Overlap a sweep reads again from Overlap before the latest change
// the previous sweep had seen, for the changes committed late (a slow
// transaction, a daemon whose clock runs behind). So a change is read
// about three times whatever the poll interval, and not once per look
// through the overlap. It holds the reports that have sightings only.
package community

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Store is where the counts are read.
type Store interface {
	SightingCountsPage(ctx context.Context, q SightingCountsQuery) ([]core.SightingCounts, error)
	CountSightings(ctx context.Context, threatIDs []string) ([]core.SightingCounts, error)
	SubmitterRecordsAll(ctx context.Context) ([]core.SubmitterRecord, error)
	CampaignMembers(ctx context.Context) ([]CampaignMember, error)
}

// RecordsEvery is at most how often a view reads the submitters' records
// again (their part of the confidence moves with each of their reports'
// decisions): every 10 looks, at least a second and at most a minute
// apart.
const RecordsEvery = time.Minute

// Overlap is how far back a sweep re-reads before the latest change the
// previous sweep had seen, and how often sweeps run: a change committed up
// to this long after its time (a slow transaction, another daemon's clock
// running behind) is still found, at most two sweeps later.
const Overlap = 10 * time.Second

// page bounds the counts read at once.
const page = 5000

// counts are a report's counts as the view keeps them.
type counts struct {
	seen, falsePositive, expired, votes, weight int64
	lastSeen, updatedAt                         time.Time
	disputed                                    bool
}

// View is the daemon's copy of the community signals.
type View struct {
	store Store
	log   *slog.Logger

	mu     sync.RWMutex
	counts map[uuid.UUID]counts
	// latest and latestID are the latest change read by a look (the
	// next starts after it); loaded is set once every report's were read.
	// swept is when the last sweep ran and sweepMark the latest change
	// read before it (the next sweep starts Overlap before it).
	latest    time.Time
	latestID  string
	loaded    bool
	swept     time.Time
	sweepMark time.Time
	// now is the clock (tests set it).
	now func() time.Time
	// gen counts the changes applied (renderings cached by it are redone).
	gen atomic.Uint64
	// scores are the submitters' records as confidence counts them
	// (core.SubmitterRecord.Score), those not 0; recordsAt when read.
	scores       map[string]int
	recordsAt    time.Time
	recordsEvery time.Duration
	// campaigns are the verified reports' campaigns, read with the
	// records and after each change this daemon makes.
	campaigns map[uuid.UUID][]core.CampaignRef
	// stale: reports changed since the records were read (a decision
	// moves a submitter's record): they are read again at the next look
	// at least RecordsSoonest after the last read.
	stale atomic.Bool
}

// RecordsSoonest spaces the reads of the records that changes ask for.
const RecordsSoonest = 2 * time.Second

// ReportsChanged hears of a batch of the change feed (the follower's
// subscriber): the reports a page of changes named have their counts read
// again at once (a dispute opened or closed anywhere, a decision this
// daemon's web site just made), and their submitters' records at the next
// look. Published changes say nothing new to it.
func (v *View) ReportsChanged(b core.ChangeBatch) {
	if v == nil || len(b.Changed) == 0 {
		return
	}
	ids := b.Changed
	v.stale.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for chunk := range slices.Chunk(ids, core.MaxGetThreats) {
		if err := v.Refresh(ctx, chunk...); err != nil {
			v.log.Warn("community signals: reading changed reports' counts failed; they show at the next look", "error", err.Error())
			return
		}
	}
}

// Generation grows with every change of the view (0 for a nil view).
func (v *View) Generation() uint64 {
	if v == nil {
		return 0
	}
	return v.gen.Load()
}

// New is an empty view over store: Run (or Load) fills it.
func New(store Store, log *slog.Logger) *View {
	return &View{store: store, log: log, counts: map[uuid.UUID]counts{}, scores: map[string]int{}, recordsEvery: RecordsEvery, now: time.Now}
}

// Run loads the view, then looks for changes every interval until ctx
// ends; a failed look is logged and tried again at the next.
func (v *View) Run(ctx context.Context, interval time.Duration) {
	v.mu.Lock()
	v.recordsEvery = min(RecordsEvery, max(time.Second, 10*interval))
	v.mu.Unlock()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := v.Catch(ctx); err != nil && ctx.Err() == nil {
			v.log.Warn("community signals: reading sighting counts failed; retrying", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Catch reads every report's counts the first time, then those changed
// after the latest change it read (every Overlap, a sweep from Overlap
// before the previous sweep's latest change); and the submitters' records
// every RecordsEvery.
func (v *View) Catch(ctx context.Context) error {
	if err := v.catchCounts(ctx); err != nil {
		return err
	}
	v.mu.RLock()
	since := time.Since(v.recordsAt)
	due := since >= v.recordsEvery || v.stale.Load() && since >= RecordsSoonest
	v.mu.RUnlock()
	if due {
		v.stale.Store(false)
		return v.RefreshRecords(ctx)
	}
	return nil
}

// RefreshCampaigns reads every report's campaigns now (after this daemon
// changed a campaign).
func (v *View) RefreshCampaigns(ctx context.Context) error {
	if v == nil {
		return nil
	}
	members, err := v.store.CampaignMembers(ctx)
	if err != nil {
		return err
	}
	byThreat := map[uuid.UUID][]core.CampaignRef{}
	for _, m := range members {
		if id, err := uuid.Parse(m.ThreatID); err == nil {
			byThreat[id] = append(byThreat[id], m.Ref)
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !maps.EqualFunc(byThreat, v.campaigns, slices.Equal) {
		v.gen.Add(1)
	}
	v.campaigns = byThreat
	return nil
}

// RefreshRecords reads every submitter's record and every report's
// campaigns now.
func (v *View) RefreshRecords(ctx context.Context) error {
	if err := v.RefreshCampaigns(ctx); err != nil {
		return err
	}
	recs, err := v.store.SubmitterRecordsAll(ctx)
	if err != nil {
		return err
	}
	scores := make(map[string]int, len(recs))
	for _, r := range recs {
		if sc := r.Score(); sc != 0 {
			scores[r.UserID] = sc
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !maps.Equal(scores, v.scores) {
		v.gen.Add(1)
	}
	v.scores, v.recordsAt = scores, time.Now()
	return nil
}

func (v *View) catchCounts(ctx context.Context) error {
	now := v.now()
	v.mu.RLock()
	q := SightingCountsQuery{Since: v.latest, After: v.latestID, Limit: page}
	loaded, sweep := v.loaded, now.Sub(v.swept) >= Overlap
	mark := v.sweepMark
	v.mu.RUnlock()
	switch {
	case !loaded:
		// Every report's, in id order (the cursor is set from the
		// latest change among them).
		q = SightingCountsQuery{Limit: page}
	case sweep:
		q = SightingCountsQuery{Since: mark.Add(-Overlap), Limit: page}
		if mark.IsZero() {
			q.Since = time.Unix(0, 0)
		}
	case q.Since.IsZero():
		q.Since = time.Unix(0, 0)
	}
	started := v.latestRead()
	for {
		rows, err := v.store.SightingCountsPage(ctx, q)
		if err != nil {
			return err
		}
		v.set(rows, true)
		if len(rows) < page {
			break
		}
		last := rows[len(rows)-1]
		q.After = last.ThreatID
		if !q.Since.IsZero() {
			q.Since = last.UpdatedAt
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.loaded || sweep {
		// The next sweep starts Overlap before the latest change read
		// before this one began; after the first read (in id order, so
		// a change committed meanwhile may be behind it), Overlap before
		// it began.
		v.swept, v.sweepMark = now, started
		if !v.loaded {
			v.sweepMark = now
		}
	}
	v.loaded = true
	return nil
}

// latestRead is the latest change a look has read.
func (v *View) latestRead() time.Time {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.latest
}

// Refresh reads the counts of these reports now (after this daemon has
// stored sightings of them), at most core.MaxGetThreats at once.
func (v *View) Refresh(ctx context.Context, threatIDs ...string) error {
	if v == nil || len(threatIDs) == 0 {
		return nil
	}
	rows, err := v.store.CountSightings(ctx, threatIDs)
	if err != nil {
		return err
	}
	// Not a look: the cursor stays (another daemon's changes committed
	// meanwhile with earlier times are read by the next look).
	v.set(rows, false)
	return nil
}

// set applies rows; a look's (cursor) move the cursor to the latest of
// them in (updated_at, threat id) order.
func (v *View) set(rows []core.SightingCounts, cursor bool) {
	if len(rows) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range rows {
		if cursor && (r.UpdatedAt.After(v.latest) || r.UpdatedAt.Equal(v.latest) && r.ThreatID > v.latestID) {
			v.latest, v.latestID = r.UpdatedAt, r.ThreatID
		}
		id, err := uuid.Parse(r.ThreatID)
		if err != nil {
			continue
		}
		c, had := v.counts[id]
		if !r.Any() {
			if had {
				delete(v.counts, id)
				v.gen.Add(1)
			}
			continue
		}
		// Counts only grow: a look that read an older row (another
		// daemon's slower transaction) does not take them back.
		if r.UpdatedAt.Before(c.updatedAt) {
			continue
		}
		n := counts{seen: r.Seen, falsePositive: r.FalsePositive, expired: r.Expired, votes: r.Votes, weight: r.Weight, disputed: r.Disputed,
			lastSeen: r.LastSeen.UTC(), updatedAt: r.UpdatedAt.UTC()}
		if had && n == c {
			continue
		}
		v.counts[id] = n
		v.gen.Add(1)
	}
}

// Of is what the community says of the verified report id, submitted by
// submitter ("" for an import), now (a nil view says nothing: no
// sightings, the base confidence).
func (v *View) Of(id uuid.UUID, submitter string) core.Community {
	var (
		c         counts
		score     int
		campaigns []core.CampaignRef
	)
	if v != nil {
		v.mu.RLock()
		c = v.counts[id]
		if submitter != "" {
			score = v.scores[submitter]
		}
		campaigns = v.campaigns[id]
		v.mu.RUnlock()
	}
	out := core.Community{
		Sightings: core.SightingCounts{ThreatID: id.String(), Seen: c.seen, FalsePositive: c.falsePositive, Expired: c.expired,
			LastSeen: c.lastSeen, UpdatedAt: c.updatedAt, Votes: c.votes, Disputed: c.disputed, Weight: c.weight},
		Disputed:  c.disputed,
		ChangedAt: c.updatedAt,
		Campaigns: campaigns,
	}
	out.Confidence = core.Confidence(core.ConfidenceInput{Seen: c.weight, Votes: int(c.votes), Disputed: c.disputed, Record: score})
	return out
}

// OfThreat is Of for a report (the base for one whose id is not a UUID).
func (v *View) OfThreat(t core.Threat) core.Community {
	id, err := uuid.Parse(t.ID)
	if err != nil {
		v = nil
	}
	c := v.Of(id, t.SubmitterID)
	c.Sightings.ThreatID = t.ID
	return c
}
