package exposure

import (
	"cmp"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/versioning"
)

// detectorQueue bounds the reports waiting for their exposures to be
// found; catchUpPage is a page of the feed read again.
const (
	detectorQueue = 10_000
	catchUpPage   = 50
	// versionsPage is a page of a package's versions served or listed.
	versionsPage = 10_000
	// settle is Detector.Settle's default: the index's freshness on
	// every daemon, and the ledger's second.
	settle = 5 * time.Second
)

// Detector finds exposures as reports refuse versions: a subscriber of
// the change feed (every verification and revision of a package report)
// and of package analysis (a suspicious version's report). Every daemon
// runs one; the store records each exposure once whichever finds it.
type Detector struct {
	Store Store
	Log   *slog.Logger
	// Found, when set, is told each report's exposure.found event once,
	// when it is queued for the webhooks (syslog).
	Found func(ev Event)
	// Feed, when set, is read when the detector starts: the verifications
	// and revisions since the mark (Store.ExposureMark), which no daemon
	// looked at (all were stopped), or of the CatchUp before when there
	// is no mark yet.
	Feed interface {
		Feed(ctx context.Context, q core.FeedQuery) ([]core.FeedItem, error)
	}
	CatchUp time.Duration
	// Settle is how long after a change its exposures are looked for a
	// second time: the firewall serves a version until its index has the
	// change, and the ledger writes what it served a second later, on
	// every daemon. The second look reads only the rows served (and the
	// projects scanned) from Settle before the change.
	Settle time.Duration
	// Pins, when set, are the digests a reported image's tag resolved to
	// (core/firewall's pin store).
	Pins interface {
		PinnedDigests(ctx context.Context, threatIDs []string) ([]firewall.DigestPin, error)
	}

	// in holds pointers: a channel's buffer is allocated whole, and
	// 10,000 jobs (a report each) would hold 5 MB from start-up.
	in chan *job
	// behind is the time of the earliest change not queued (the queue
	// was full), read again from the feed once the queue is empty.
	mu     sync.Mutex
	behind time.Time
	// marked is when the mark was last moved (at most once a second).
	marked time.Time
}

// job is one report whose versions to look for: versions nil means the
// versions its version_info names.
type job struct {
	threat   core.Threat
	versions []string
	at       time.Time // the change's time
	// since is a second look's: only what was seen since.
	since time.Time
}

// NewDetector returns a detector; Run finds what it is told.
func NewDetector(store Store, log *slog.Logger) *Detector {
	return newDetector(store, log, detectorQueue)
}

func newDetector(store Store, log *slog.Logger, queue int) *Detector {
	return &Detector{Store: store, Log: log, Settle: settle, in: make(chan *job, queue)}
}

// ReportsChanged takes the verifications and revisions of package reports
// (index.Subscriber): it never waits.
func (d *Detector) ReportsChanged(b core.ChangeBatch) {
	for _, it := range b.Published {
		if it.Event.Kind != core.ChangeVerified && it.Event.Kind != core.ChangeRevised {
			continue
		}
		if it.Threat.ReportType != core.TypePackage && it.Threat.ReportType != core.TypeContainer || it.Threat.Status != core.StatusVerified {
			continue
		}
		if !d.enqueue(job{threat: slim(it.Threat), at: it.Event.At}) {
			// An import verifies thousands at once: what does not fit is
			// read again from the feed, from its time, when the queue
			// is empty (Run).
			d.mu.Lock()
			if d.behind.IsZero() || it.Event.At.Before(d.behind) {
				d.behind = it.Event.At
			}
			d.mu.Unlock()
		}
	}
}

// Suspicious takes a version held by a pending analysis report.
func (d *Detector) Suspicious(ecosystem, name, version, reportID string) {
	if !d.enqueue(job{threat: core.Threat{ID: reportID, ReportType: core.TypePackage, Registry: ecosystem, ResourceIdentifier: name}, versions: []string{version}, at: time.Now()}) {
		d.Log.Warn("exposure: the queue is full; a suspicious version's exposures are looked for when its report is verified", "threat_id", reportID)
	}
}

func (d *Detector) enqueue(j job) bool {
	select {
	case d.in <- &j:
		return true
	default:
		return false
	}
}

// Run looks at the changes of the CatchUp before it started, then finds
// the exposures of what it is told until ctx ends.
func (d *Detector) Run(ctx context.Context) {
	if d.Feed != nil && d.CatchUp > 0 {
		d.startUp(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-d.in:
			// What is queued with it, at most a batch: one storage call
			// says which of their packages anyone got.
			batch := []job{*j}
		more:
			for len(batch) < MaxBatch {
				select {
				case j := <-d.in:
					batch = append(batch, *j)
				default:
					break more
				}
			}
			if err := d.findAll(ctx, batch); err != nil && ctx.Err() == nil {
				d.Log.Warn("exposure: finding reports' exposures failed", "reports", len(batch), "error", err.Error())
			}
			for _, j := range batch {
				if wait := time.Until(j.at.Add(d.Settle)); j.since.IsZero() && wait > 0 {
					d.lookAgain(ctx, j, min(wait, d.Settle))
				}
			}
			if last := batch[len(batch)-1]; last.since.IsZero() && !last.at.IsZero() {
				d.mark(ctx, last.at, false)
			}
		}
		if len(d.in) == 0 {
			d.readBehind(ctx)
		}
	}
}

// startUp reads the changes since the mark (or the CatchUp before, when
// no daemon has set one). The mark moves only to changes looked at:
// those queued meanwhile are after it until they are.
func (d *Detector) startUp(ctx context.Context) {
	start := time.Now()
	from, err := d.Store.ExposureMark(ctx)
	if err != nil {
		d.Log.Warn("exposure: reading the feed's mark failed; reading the day before", "error", err.Error())
	}
	if from.IsZero() {
		from = start.Add(-d.CatchUp)
	}
	if err := d.catchUp(ctx, from.Add(-time.Second)); err != nil {
		if ctx.Err() == nil {
			d.Log.Warn("exposure: reading the changes made before the start failed", "error", err.Error())
		}
		return
	}
	d.Log.Info("exposure: looked at the changes made before the start", "since", from, "took_ms", time.Since(start).Milliseconds())
}

// mark moves the mark to at, at most once a second unless now: never
// past a change the queue could not hold (behind).
func (d *Detector) mark(ctx context.Context, at time.Time, now bool) {
	d.mu.Lock()
	if !d.behind.IsZero() && d.behind.Before(at) {
		at = d.behind.Add(-time.Second)
	}
	due := now || time.Since(d.marked) >= time.Second
	if due {
		d.marked = time.Now()
	}
	d.mu.Unlock()
	if !due {
		return
	}
	if err := d.Store.MoveExposureMark(ctx, at); err != nil && ctx.Err() == nil {
		d.Log.Warn("exposure: moving the feed's mark failed", "error", err.Error())
	}
}

// lookAgain queues j's second look after wait: the rows served and the
// projects scanned from Settle before the change on.
func (d *Detector) lookAgain(ctx context.Context, j job, wait time.Duration) {
	j.since = j.at.Add(-d.Settle)
	time.AfterFunc(wait, func() {
		if ctx.Err() == nil && !d.enqueue(j) {
			d.Log.Warn("exposure: the queue is full; a report's second look is not made", "threat_id", j.threat.ID)
		}
	})
}

// readBehind reads again from the feed the changes that did not fit in
// the queue, from the earliest one's time (a second before it: the
// store records each exposure once, so reading one twice costs nothing).
func (d *Detector) readBehind(ctx context.Context) {
	d.mu.Lock()
	from := d.behind
	d.behind = time.Time{}
	d.mu.Unlock()
	if from.IsZero() {
		return
	}
	if d.Feed == nil {
		d.Log.Warn("exposure: the queue was full; the exposures of reports verified since then are not looked for", "since", from)
		return
	}
	d.Log.Info("exposure: the queue was full; reading the feed's changes again", "since", from)
	if err := d.catchUp(ctx, from.Add(-time.Second)); err != nil && ctx.Err() == nil {
		d.Log.Warn("exposure: reading the changes the queue could not hold failed; trying again", "error", err.Error())
		d.mu.Lock()
		if d.behind.IsZero() || from.Before(d.behind) {
			d.behind = from
		}
		d.mu.Unlock()
	}
}

// catchUp finds the exposures of the reports verified or revised from
// from until now, a page of the feed at a time: at the start, the changes
// made while no daemon ran (the change feed's subscribers hear only what
// comes after the start); later, those the queue could not hold.
// Exposures already recorded are not recorded again.
func (d *Detector) catchUp(ctx context.Context, from time.Time) error {
	now := time.Now().UTC()
	// Small pages: an item carries its whole report (a report's text may
	// be 200 KB), and the look-back runs beside the daemon's start.
	q := core.FeedQuery{From: from, To: now, Limit: catchUpPage}
	for {
		items, err := d.Feed.Feed(ctx, q)
		if err != nil {
			return err
		}
		var jobs []job
		for _, it := range items {
			if (it.Event.Kind == core.ChangeVerified || it.Event.Kind == core.ChangeRevised) && it.Threat.Status == core.StatusVerified &&
				(it.Threat.ReportType == core.TypePackage || it.Threat.ReportType == core.TypeContainer) {
				jobs = append(jobs, job{threat: slim(it.Threat)})
			}
		}
		if err := d.findAll(ctx, jobs); err != nil {
			return err
		}
		if len(items) > 0 {
			d.mark(ctx, items[len(items)-1].Event.At, len(items) < q.Limit)
		}
		if len(items) < q.Limit {
			return nil
		}
		last := items[len(items)-1].Event
		q.AfterAt, q.AfterSeq = last.At, last.Seq
	}
}

// findAll finds the exposures of jobs: only those whose package a ledger
// row or an inventory names are looked at further (one storage call for
// them all: an import verifies thousands of reports of packages nobody
// got).
func (d *Detector) findAll(ctx context.Context, jobs []job) error {
	if len(jobs) == 0 {
		return nil
	}
	pkgs := make([]Package, len(jobs))
	for i, j := range jobs {
		pkgs[i] = packageOf(j.threat)
	}
	got, err := d.Store.ExposedPackages(ctx, pkgs)
	if err != nil {
		return err
	}
	seen := make(map[Package]bool, len(got))
	for _, p := range got {
		seen[p] = true
	}
	var first error
	for i, j := range jobs {
		if !seen[pkgs[i]] {
			continue
		}
		if err := d.find(ctx, j); err != nil {
			if ctx.Err() != nil {
				return err
			}
			d.Log.Warn("exposure: finding a report's exposures failed", "threat_id", j.threat.ID, "error", err.Error())
			first = cmp.Or(first, err)
		}
	}
	return first
}

// slim is what finding a report's exposures reads of it: not its texts
// (200 KB a report at most), which a queue of 10,000 and the second
// looks' timers would otherwise hold.
func slim(t core.Threat) core.Threat {
	return core.Threat{ID: t.ID, ReportType: t.ReportType, Registry: t.Registry, ResourceIdentifier: t.ResourceIdentifier,
		CanonicalKey: t.CanonicalKey, Status: t.Status, AllVersions: t.AllVersions, Details: core.Details{VersionInfo: t.Details.VersionInfo}}
}

// packageOf is the package a report's exposures are of, as the ledger
// names it.
func packageOf(t core.Threat) Package {
	if t.ReportType == core.TypeContainer {
		_, canonical, _ := strings.Cut(t.CanonicalKey, ":")
		path, _, _ := core.ContainerRepository(canonical)
		return Package{Ecosystem: firewall.FirewallOCI, Name: core.ImagePath(path)}
	}
	eco := firewall.FirewallName(t.Registry)
	return Package{Ecosystem: eco, Name: firewall.FoldName(eco, t.ResourceIdentifier)}
}

// find records the exposures of one report: the versions of its package
// that a ledger row or an inventory names, as the report refuses them.
func (d *Detector) find(ctx context.Context, j job) error {
	t := j.threat
	if t.ReportType == core.TypeContainer {
		return d.findImage(ctx, t, j.since)
	}
	eco := firewall.FirewallName(t.Registry)
	p := Package{Ecosystem: eco, Name: firewall.FoldName(eco, t.ResourceIdentifier)}
	var n int64
	var err error
	if j.versions != nil {
		n, err = d.Store.RecordExposures(ctx, Found{ThreatID: t.ID, Ecosystem: p.Ecosystem, Name: p.Name, Versions: j.versions, At: time.Now().UTC(), Since: j.since})
	} else {
		n, err = d.record(ctx, t.ID, p, j.since, func(v string) bool { return t.AllVersions || versioning.Matches(t.Registry, t.Details.VersionInfo, v) })
	}
	if err != nil || n == 0 {
		return err
	}
	d.Log.Warn("exposure found: a version a report refuses was served or is in a project's lockfile", "threat_id", t.ID, "package", p.Name, "ecosystem", p.Ecosystem, "exposures", n)
	return d.event(ctx, t.ID, t.Registry)
}

// record records the exposures of the package's versions that match, a
// page of its versions at a time, and returns how many are new.
func (d *Detector) record(ctx context.Context, threatID string, p Package, since time.Time, match func(version string) bool) (int64, error) {
	p.Limit = versionsPage
	var total int64
	for {
		seen, err := d.Store.ExposedVersions(ctx, p)
		if err != nil {
			return total, err
		}
		var versions []string
		for _, v := range seen {
			if match(v) {
				versions = append(versions, v)
			}
		}
		if len(versions) > 0 {
			n, err := d.Store.RecordExposures(ctx, Found{ThreatID: threatID, Ecosystem: p.Ecosystem, Name: p.Name, Versions: versions, At: time.Now().UTC(), Since: since})
			total += n
			if err != nil {
				return total, err
			}
		}
		if len(seen) < p.Limit {
			return total, nil
		}
		p.After = seen[len(seen)-1]
	}
}

// findImage records the exposures of a container report: the ledger's
// rows of its image asked for by its tag or digest, or by a digest its
// tag resolved to (the pins of the report); every row of the image when
// the report names neither.
func (d *Detector) findImage(ctx context.Context, t core.Threat, since time.Time) error {
	_, canonical, _ := strings.Cut(t.CanonicalKey, ":")
	path, tag, digest := core.ContainerRepository(canonical)
	p := Package{Ecosystem: firewall.FirewallOCI, Name: core.ImagePath(path)}
	want := map[string]bool{}
	for _, r := range []string{tag, digest} {
		if r != "" {
			want[r] = true
		}
	}
	if d.Pins != nil {
		pins, err := d.Pins.PinnedDigests(ctx, []string{t.ID})
		if err != nil {
			return err
		}
		for _, pin := range pins {
			want[pin.Digest] = true
		}
	}
	n, err := d.record(ctx, t.ID, p, since, func(v string) bool { return t.AllVersions && tag == "" && digest == "" || want[v] })
	if err != nil || n == 0 {
		return err
	}
	d.Log.Warn("exposure found: an image a report refuses was pulled through the firewall", "threat_id", t.ID, "image", p.Name, "exposures", n)
	return d.event(ctx, t.ID, t.Registry)
}

// event queues a report's exposure.found event: its first
// MaxEventExposures exposures and their total.
func (d *Detector) event(ctx context.Context, threatID, registry string) error {
	es, err := d.Store.ListExposures(ctx, Query{ThreatID: threatID, Limit: MaxEventExposures})
	if err != nil {
		return err
	}
	total, err := d.Store.ExposureCount(ctx, threatID)
	if err != nil {
		return err
	}
	ev := Event{ThreatID: threatID, Ecosystem: registry, Total: total, At: time.Now().UTC()}
	if ev.Body, err = EventBody(ev, es); err != nil {
		return err
	}
	queued, err := d.Store.QueueExposureEvent(ctx, ev)
	if err == nil && queued && d.Found != nil {
		d.Found(ev)
	}
	return err
}
