package core

import (
	"context"
	"time"
)

// MaxGetThreats bounds the ids of one Store.GetThreats call.
const MaxGetThreats = 1000

// MaxListUsers bounds the users of one Store.ListUsers call.
const MaxListUsers = 1000

// MaxPage bounds the rows of one paged Store read (LatestVerified,
// QueryThreats, Feed, Changes, ListPending, ListSubmissions). A store never
// replaces a limit it is given: one outside 1..MaxPage is refused with
// ErrInvalid (CheckLimit), so that no layer quietly returns less than it
// was asked for. Callers that want more read page after page.
const MaxPage = 10000

// MaxKeyPrefixes bounds the key ranges of one ThreatsByKeyPrefix call (one
// per package registry and more): a call reads at most MaxKeyPrefixes ×
// limit keys.
const MaxKeyPrefixes = 16

// CheckLimit refuses a page size outside 1..max: the storage side of "no
// layer quietly shrinks what it was asked for".
func CheckLimit(limit, max int) error {
	if limit < 1 || limit > max {
		return Invalid("limit", "must be from 1 to %d rows a call (got %d): read page after page", max, limit)
	}
	return nil
}

// Store is the domain's own part of the storage port (core/port
// assembles the whole, with each feature's store): accounts, reports and
// review, what is published, imports and operations. Every method is one
// coarse operation run in one transaction inside the storage backend,
// because every call may cross a process boundary. Errors are the domain
// errors of this package (ErrNotFound, ErrConflict, ErrLimit, FieldError),
// wrapped as needed.
type Store interface {
	AccountStore
	ReportStore
	PublishedStore
	ImportStore
	OperationsStore
}

// ReportStore keeps reports through submission, review and revision.
type ReportStore interface {
	// CreateThreat stores a new pending report and its details in one
	// transaction, after checking, in this order and atomically with the
	// insert: the new-user cap (*NewUserCapError), the hourly limit
	// (*HourlyLimitError) and the live duplicate key (*ConflictError with
	// Meta id, status, package_name, registry). Storage failures are
	// *StepError naming the step. The caller sets every field (id,
	// status, times, Version 1), so nothing comes back.
	CreateThreat(ctx context.Context, s SubmittedThreat) error
	// GetThreat returns a report with its details.
	GetThreat(ctx context.Context, id string) (Threat, error)
	// GetThreats returns the reports with these ids (at most
	// MaxGetThreats), in no particular order; unknown ids are left out.
	// It is the read of the record cache and of lists, which show no
	// indicators: the reports come without them (Threat.IOCs nil), as from
	// ListSubmissions and ThreatsByKeyPrefix. GetThreat, ListPending,
	// LatestVerified (its exports), QueryThreats and Feed return them.
	GetThreats(ctx context.Context, ids []string) ([]Threat, error)
	// GetThreatsWithIOCs is GetThreats with each report's stored
	// indicators (Threat.IOCs): the read of the index spill's fill, from
	// which the block lists are built too.
	GetThreatsWithIOCs(ctx context.Context, ids []string) ([]Threat, error)
	// ListSubmissions returns one page of the reports a user submitted,
	// newest first (q.Limit 1..MaxPage, else ErrInvalid), and how many
	// there are in all.
	ListSubmissions(ctx context.Context, q SubmissionQuery) (ThreatList, error)
	// SubmitterRecords returns, for each of these users (at most
	// MaxGetThreats), their public name and how many of their reports are
	// verified, rejected and pending: what a reviewer weighs a new report
	// by. Unknown ids are left out.
	SubmitterRecords(ctx context.Context, userIDs []string) ([]SubmitterRecord, error)
	// ListPending returns one keyset page of pending reports, oldest first
	// (q.Limit 1..MaxPage, else ErrInvalid), and how many are pending in all.
	ListPending(ctx context.Context, q PendingQuery) (ThreatList, error)
	// ReviewThreat applies a review decision through the state machine and
	// keeps it as a review event.
	ReviewThreat(ctx context.Context, r Review) (Threat, error)
	// RecordDuplicate counts a submission refused as a duplicate on its
	// submitter's record (a reputation event of 0 points).
	RecordDuplicate(ctx context.Context, d Duplicate) error
	// ReviewEvents returns a report's review events, oldest first.
	ReviewEvents(ctx context.Context, threatID string) ([]ReviewEvent, error)

	// ModifyThreat stores a change: applied at once when the author submitted
	// the report and it is pending, otherwise kept as a pending revision. It
	// checks the hourly limit of m.Policy (revisions count), refuses
	// rejected reports (ErrConflict) and returns ErrStale when the report's
	// revision is no longer m.BaseRevision.
	ModifyThreat(ctx context.Context, m Modification) (Modified, error)
	// DecideRevision approves (applies) or rejects a pending revision.
	DecideRevision(ctx context.Context, d RevisionDecision) (Modified, error)
	// ListPendingRevisions returns pending revisions, oldest first.
	ListPendingRevisions(ctx context.Context) ([]Revision, error)
	// ListRevisions returns every revision of a report, oldest first.
	ListRevisions(ctx context.Context, threatID string) ([]Revision, error)
	// GetRevision returns one revision (ErrNotFound when there is none).
	GetRevision(ctx context.Context, id string) (Revision, error)
}

// PublishedStore reads what is published: the verified reports behind the
// in-memory index and the latest lists, the paged feeds, and the changes.
type PublishedStore interface {
	// LatestVerified returns up to f.Limit (1..MaxPage, else ErrInvalid)
	// verified reports matching f, most recently verified first.
	LatestVerified(ctx context.Context, f LatestFilter) ([]Threat, error)
	// EachVerifiedSummary calls fn with batches of the summaries of every
	// verified report (the in-memory index is loaded from it).
	EachVerifiedSummary(ctx context.Context, fn func([]Summary) error) error
	// QueryThreats returns verified reports matching q, one page of up to
	// q.Limit (1..MaxPage, else ErrInvalid).
	QueryThreats(ctx context.Context, q ThreatQuery) ([]Threat, error)
	// CountThreats counts the reports q selects (its filters, whatever its
	// keyset position and limit).
	CountThreats(ctx context.Context, q ThreatQuery) (int64, error)
	// ThreatsByKeyPrefix returns up to q.Limit (1..MaxPage) verified
	// reports whose canonical key starts with one of q.Prefixes
	// (1..MaxKeyPrefixes, none empty) and sorts after q.After, in canonical
	// key order: the package-name prefix search, one range per registry in
	// one call.
	ThreatsByKeyPrefix(ctx context.Context, q KeyPrefixQuery) ([]Threat, error)
	// Feed returns one page of up to q.Limit (1..MaxPage, else ErrInvalid)
	// of the published changes q selects, in commit order, each with its
	// report as it is now.
	Feed(ctx context.Context, q FeedQuery) ([]FeedItem, error)
	// LastFeedEvent returns the position of the last change committed
	// before to (zero when there is none): where a consumer resumes.
	LastFeedEvent(ctx context.Context, to time.Time) (FeedEvent, error)
	// Changes returns up to q.Limit (1..MaxPage, else ErrInvalid) changes
	// with Seq > q.After, in Seq order (every daemon on the database
	// follows them to keep its index).
	Changes(ctx context.Context, q ChangeQuery) ([]Change, error)
}

// ImportStore applies records of upstream sources.
type ImportStore interface {
	// ImportThreats applies a batch of upstream records in one transaction
	// and returns one outcome per record, in order.
	ImportThreats(ctx context.Context, b ImportBatch) ([]ImportOutcome, error)
	// ImportedVersions returns, for upstream ids of a source (at most
	// MaxImportedVersions), the upstream modified time of the report
	// imported under each; ids never imported, or imported without a
	// modified time, are left out. A re-import asks it before decoding
	// records in full.
	ImportedVersions(ctx context.Context, q VersionQuery) (map[string]time.Time, error)
	// ImportedIDs returns one page of up to q.Limit (1..MaxImportedVersions)
	// upstream ids of q.Source's live reports (pending or verified), in
	// upstream id order after q.After: what an import with --full
	// compares with the ids its files list.
	ImportedIDs(ctx context.Context, q ImportedIDQuery) ([]string, error)
}

// ImportedIDQuery is one page of a source's live upstream ids
// (ImportStore.ImportedIDs).
type ImportedIDQuery struct {
	Source, After string
	Limit         int
}

// OperationsStore is what running the service needs besides the reports:
// schema, health, shared secrets, leases and counters, and copying a store.
type OperationsStore interface {
	// Migrate applies pending schema migrations and returns the names applied.
	Migrate(ctx context.Context) ([]string, error)
	// Health returns nil when the backend can serve requests.
	Health(ctx context.Context) error
	// Stats returns row counts, for health reports and first-run detection.
	Stats(ctx context.Context) (Stats, error)

	// Secret returns the named service secret, creating it (32 random bytes,
	// hex) on first use; every daemon on the database gets the same one.
	Secret(ctx context.Context, name string) (string, error)
	// Lease takes or renews the lease l.Name for l.Holder until l.TTL from
	// now; false when another holder has it.
	Lease(ctx context.Context, l LeaseClaim) (bool, error)
	// AddUsage adds paid-call counts; Usage returns a token's counts of a day.
	AddUsage(ctx context.Context, deltas []UsageDelta) error
	Usage(ctx context.Context, q UsageQuery) (map[string]int64, error)
	// SyncRateCounts adds r.Counts to the shared request counters of the
	// rate window r.Window and returns the window's totals (limits.store:
	// storage).
	SyncRateCounts(ctx context.Context, r RateCounts) (map[string]int64, error)
	// RuleIDs gives each of q.Rules (at most MaxRuleIDs, indicators
	// listed once) its rule number and revision, shared by every daemon
	// on the database: an indicator keeps the number it was first given
	// (numbers start at 1 and are never reused); its revision starts at 1
	// and grows by one each time it is asked with another Basis than the
	// one stored. Results are in q.Rules' order.
	RuleIDs(ctx context.Context, q RuleIDQuery) ([]RuleID, error)

	// Export calls fn with every stored row, table by table in foreign-key
	// order, as batches of bounded size (copy-storage).
	Export(ctx context.Context, fn func(table string, rows []byte) error) error
	// Import writes exported batches, read with next until ok is false, in one
	// transaction into an empty store, and returns the rows written per table.
	Import(ctx context.Context, next func() (table string, rows []byte, ok bool, err error)) (map[string]int64, error)

	// Close releases the backend.
	Close() error
}

// Stats are row counts of a store.
type Stats struct {
	Users   int64
	Tokens  int64
	Threats int64
	LastSeq int64
}

// SubmittedThreat is a new pending report and the limits its submitter is
// held to (ReportStore.CreateThreat).
type SubmittedThreat struct {
	Threat Threat
	Policy SubmitPolicy
}

// SubmissionQuery is one page of the reports a user submitted, newest
// first (ReportStore.ListSubmissions).
type SubmissionQuery struct {
	UserID        string
	Offset, Limit int
}

// ThreatList is one page of reports and how many there are in all
// (ReportStore.ListSubmissions, ReportStore.ListPending).
type ThreatList struct {
	Threats []Threat
	Total   int
}

// Modified is a report after a change or a decision on a revision, and the
// revision (ReportStore.ModifyThreat, ReportStore.DecideRevision).
type Modified struct {
	Threat   Threat
	Revision Revision
}

// PendingQuery is one keyset page of the review queue: the pending reports
// after (AfterCreatedAt, AfterID) in (created_at, id) order.
type PendingQuery struct {
	AfterCreatedAt time.Time
	AfterID        string // "" = from the oldest
	Limit          int
}

// SubmitterRecord is a submitter's track record (ReportStore.SubmitterRecords).
type SubmitterRecord struct {
	UserID, Name                string
	Verified, Rejected, Pending int64
}

// LatestFilter selects verified reports for the latest-threats endpoints.
type LatestFilter struct {
	ReportType ReportType // "" = any
	Registry   string     // "" = any
	Severity   Severity   // "" = any
	Limit      int
}

// Summary is what the in-memory index keeps of a verified report.
type Summary struct {
	ID           string
	CanonicalKey string
	ReportType   ReportType
	Registry     string
	VerifiedAt   time.Time
	VersionInfo  string
	AllVersions  bool
}

// ThreatQuery selects verified reports for the paged paid endpoints, in
// (verified_at, id) order: ascending for feeds, descending when Descending.
type ThreatQuery struct {
	VerifiedFrom, VerifiedTo time.Time // [from, to); zero = unbounded
	Registry                 string
	Publisher                string // matched case-insensitively, exactly
	// UpstreamID selects the reports imported from the OSV source under
	// this record id: "<id>", or "<id>/<registry>/<name>" for each package
	// of a record with several.
	UpstreamID string
	// After is the keyset position of the last report of the previous page.
	AfterVerifiedAt time.Time
	AfterID         string
	Descending      bool
	// Withdrawn adds the reports withdrawn after they were verified (their
	// verified_at is kept).
	Withdrawn bool
	// ReportType and Severity select one type and one severity ("" = any).
	ReportType ReportType
	Severity   Severity
	// IndicatorKey selects the reports that list the indicator
	// ioc.Key(type, value) among theirs ("" = any).
	IndicatorKey string
	// Listing asks for the reports as a list shows them: without their
	// details but for the severity (Details.SeverityLevel), which a store
	// keeps on the report's row. A page of a list then reads no text.
	Listing bool
	// IOCsOnly asks for the reports with their stored indicators
	// (Threat.IOCs) and none of their other details: what the block
	// lists read of every verified report at start-up.
	IOCsOnly bool
	Limit    int
}

// KeyPrefixQuery is one page of verified reports by canonical key prefix
// (PublishedStore.ThreatsByKeyPrefix).
type KeyPrefixQuery struct {
	Prefixes []string
	After    string // the last canonical key of the previous page
	Limit    int
}

// ChangeQuery is one page of the change feed (PublishedStore.Changes).
type ChangeQuery struct {
	After int64 // the last Seq seen; 0 = from the first
	Limit int
}

// ImportBatch is a batch of upstream records applied in one transaction,
// and the actor the review events name (ImportStore.ImportThreats).
type ImportBatch struct {
	Records []ImportRecord
	Actor   string
	// SubmitterID is the user new reports are attributed to (the
	// source's user; "" = none).
	SubmitterID string
	// Pending stores new reports pending review instead of verified by
	// Actor (an import with --trust pending).
	Pending bool
}

// VersionQuery names upstream records of a source
// (ImportStore.ImportedVersions).
type VersionQuery struct {
	Source string
	IDs    []string
}

// MaxRuleIDs bounds one OperationsStore.RuleIDs call.
const MaxRuleIDs = 1000

// RuleIDQuery asks the rule numbers of indicators (OperationsStore.RuleIDs).
type RuleIDQuery struct {
	Rules []RuleBasis
}

// RuleBasis is an indicator ("domain:evil.example", "ip:203.0.113.9") and
// what its rules are made from now ("<threat id>:<version>"): when it
// changes, the rules' revision moves.
type RuleBasis struct {
	Indicator, Basis string
}

// RuleID is an indicator's rule number and revision.
type RuleID struct {
	Indicator string
	Number    int64
	Rev       int
}

// LeaseClaim takes or renews a named lease (OperationsStore.Lease).
type LeaseClaim struct {
	Name, Holder string
	TTL          time.Duration
}

// UsageQuery is a token's paid calls of a day, "2006-01-02"
// (OperationsStore.Usage).
type UsageQuery struct {
	TokenID, Day string
}

// RateCounts are request counts to add to a rate window's shared counters
// (OperationsStore.SyncRateCounts).
type RateCounts struct {
	Window int64
	Counts map[string]int64
}

// UsageDelta is a number of paid calls to add.
type UsageDelta struct {
	Day, TokenID, Endpoint string
	Calls                  int64
}

// Duplicate is a submission refused as a duplicate of ThreatID, counted
// on its submitter's record.
type Duplicate struct {
	UserID, ThreatID string
	At               time.Time
}
