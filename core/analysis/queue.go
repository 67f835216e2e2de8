package analysis

import (
	"context"
	"slices"
	"time"

	"github.com/threatd/threatd/core"
)

// Job is one version to analyse: the queue's unit, once per ecosystem,
// name and version across every daemon of one database (Store).
type Job struct {
	// Ecosystem is the reports' name of the registry (npm, pypi, go,
	// rubygems, crates.io); Name as the registry serves it (a PyPI name
	// normalised, PEP 503).
	Ecosystem, Name, Version string
	// QueuedAt is when it was queued; RequestedBy is who asked (POST
	// /analysis: the user's e-mail; "" for the firewall).
	QueuedAt    time.Time
	RequestedBy string
	// Attempts counts the claims of it (a daemon that stopped while
	// analysing leaves its lease to expire; the next claim is another
	// attempt).
	Attempts int
}

// Key is what names one analysis.
type Key struct{ Ecosystem, Name, Version string }

// Key of the job.
func (j Job) Key() Key { return Key{j.Ecosystem, j.Name, j.Version} }

// Purl names the version as a package URL (pkg:npm/x@1.0.0).
func (k Key) Purl() string {
	return core.VersionPurl(k.Ecosystem, k.Name, k.Version)
}

// States of a queued analysis.
const (
	StateQueued  = "queued"
	StateRunning = "running"
	StateDone    = "done"
)

// QueueRequest queues versions (Store.QueueAnalyses). A version already
// known is left as it is, unless Force (POST /analysis: analyse again).
// The queue holds at most MaxQueued unfinished analyses: beyond it a job
// is refused and counted in QueueResult.Full.
type QueueRequest struct {
	Jobs      []Job
	Force     bool
	MaxQueued int
}

// QueueResult says what QueueAnalyses did.
type QueueResult struct {
	// Queued were added (or queued again); Known were already known and
	// left; Full were refused because the queue was full.
	Queued, Known, Full int
}

// Claim asks for up to Limit queued analyses (Store.ClaimAnalyses): each
// is leased to Holder until Now+TTL, as a webhook outbox is.
type Claim struct {
	Holder string
	Now    time.Time
	TTL    time.Duration
	Limit  int
}

// Outcome is a finished analysis (Store.FinishAnalysis).
type Outcome struct {
	Key    Key
	Holder string
	// Digest is the archive's sha256, hex ("" when it could not be
	// fetched).
	Digest string
	Result Result
	At     time.Time
}

// Entry is what the store keeps of one version's analysis.
type Entry struct {
	Job
	State string
	// Digest, Result and AnalyzedAt are set once it has run.
	Digest     string
	Result     Result
	AnalyzedAt time.Time
	// ReportID is the pending report a suspicious verdict made (or the
	// live report of the package it met), "" when none.
	ReportID string
	// ReportStatus is that report's status ("" when none).
	ReportStatus string
}

// ReportLink records the report a suspicious analysis made
// (Store.LinkAnalysisReport).
type ReportLink struct {
	Key      Key
	ReportID string
}

// Hold is an analysis the firewall acts on: a version whose analysis has
// not ended (Unfinished), or whose pending report holds it (Suspect).
type Hold struct {
	Key
	Unfinished bool
	// Suspect: a pending report from a suspicious verdict; Strongest
	// describes its strongest finding and Findings are its strongest
	// few (MaxHoldFindings).
	Suspect   bool
	ReportID  string
	Strongest string
	Findings  []Finding
}

// MaxHoldFindings bounds the findings a hold (and a refusal) carries.
const MaxHoldFindings = 10

// HoldQuery asks for the holds (Store.AnalysisHolds), at most Limit.
type HoldQuery struct{ Limit int }

// QueueLength counts the unfinished analyses (a metric).
type QueueLength struct {
	Queued, Running int64
}

// Store keeps the analysis queue and its results (docs/analysis.md). The
// queue is an outbox as the webhooks' is: rows in the database, each
// claimed under a lease (holder, expiry) by one daemon at a time, so that
// every daemon of one database analyses a version once, and an analysis
// whose daemon stopped is claimed again when its lease expires.
type Store interface {
	// QueueAnalyses queues versions: ErrInvalid for a job with no
	// ecosystem, name or version.
	QueueAnalyses(ctx context.Context, q QueueRequest) (QueueResult, error)
	// ClaimAnalyses leases up to c.Limit (1..MaxClaim, else ErrInvalid)
	// queued analyses, and running ones whose lease expired, oldest
	// first, to c.Holder.
	ClaimAnalyses(ctx context.Context, c Claim) ([]Job, error)
	// FinishAnalysis stores a result while o.Holder holds the lease, and
	// returns the record (its ReportID as before); ErrConflict when the
	// lease went to another daemon.
	FinishAnalysis(ctx context.Context, o Outcome) (Entry, error)
	// LinkAnalysisReport records the report a suspicious analysis made.
	LinkAnalysisReport(ctx context.Context, l ReportLink) error
	// Analysis returns one version's record; ErrNotFound when it was
	// never queued.
	Analysis(ctx context.Context, k Key) (Entry, error)
	// AnalysesOfReports returns the analyses that made these reports (at
	// most MaxClaim ids, else ErrInvalid).
	AnalysesOfReports(ctx context.Context, reportIDs []string) ([]Entry, error)
	// AnalysisHolds returns up to q.Limit holds (1..MaxHolds, else
	// ErrInvalid): unfinished analyses, and suspicious ones whose report
	// is pending.
	AnalysisHolds(ctx context.Context, q HoldQuery) ([]Hold, error)
	// AnalysisQueue counts the unfinished analyses.
	AnalysisQueue(ctx context.Context) (QueueLength, error)
}

// MaxClaim bounds one claim and one look-up by reports; MaxHolds bounds
// the holds a daemon keeps.
const (
	MaxClaim = 500
	MaxHolds = 100_000
)

// Ecosystems are the registries (as reports name them) whose archives are
// analysed.
var Ecosystems = []string{"npm", "pypi", "go", "rubygems", "crates.io", "vscode", "openvsx"}

// KeyOfPurl reads the version a package URL names (pkg:npm/x@1.0.0):
// ErrInvalid when it names no version, or a registry analysis does not
// read.
func KeyOfPurl(purl string) (Key, error) {
	q, err := core.ParsePurl(purl)
	if err != nil {
		return Key{}, err
	}
	if q.ReportType != core.TypePackage || !slices.Contains(Ecosystems, q.Ecosystem) {
		return Key{}, core.Invalid("purl", "names no package analysis reads: it reads npm, PyPI, Go, RubyGems and crates.io packages (pkg:npm, pkg:pypi, pkg:golang, pkg:gem, pkg:cargo)")
	}
	if q.Version == "" {
		return Key{}, core.Invalid("purl", "names no version: a purl of one version, such as %s@1.2.3", purl)
	}
	k := Key{Ecosystem: q.Ecosystem, Name: q.ResourceIdentifier, Version: q.Version}
	if k.Ecosystem == "pypi" {
		k.Name = core.NormalizePyPIName(k.Name)
	}
	return k, nil
}
