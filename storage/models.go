package storage

import (
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

type userRow struct {
	bun.BaseModel `bun:"table:users"`

	ID                 string     `bun:"id,pk"`
	Email              string     `bun:"email,notnull"`
	Name               string     `bun:"name,notnull"`
	Tier               string     `bun:"tier,notnull"`
	Role               string     `bun:"role,notnull"`
	SubmissionsPerHour *int       `bun:"submissions_per_hour"`
	CreatedAt          time.Time  `bun:"created_at,notnull"`
	UpdatedAt          time.Time  `bun:"updated_at,notnull"`
	PasswordHash       string     `bun:"password_hash,nullzero"`
	DisabledAt         *time.Time `bun:"disabled_at"`
	DeletedAt          *time.Time `bun:"deleted_at"`
}

func (r userRow) domain() core.User {
	return core.User{
		ID: r.ID, Email: r.Email, Name: r.Name, Tier: core.Tier(r.Tier), Role: core.Role(r.Role),
		SubmissionsPerHour: r.SubmissionsPerHour, CreatedAt: r.CreatedAt.UTC(), PasswordHash: r.PasswordHash,
		DisabledAt: utcPtr(r.DisabledAt), DeletedAt: utcPtr(r.DeletedAt),
	}
}

type tokenRow struct {
	bun.BaseModel `bun:"table:api_tokens"`

	ID         string     `bun:"id,pk"`
	UserID     string     `bun:"user_id,notnull"`
	Name       string     `bun:"name,notnull"`
	Hash       string     `bun:"hash,notnull"`
	Hint       string     `bun:"hint,notnull"`
	CreatedAt  time.Time  `bun:"created_at,notnull"`
	RevokedAt  *time.Time `bun:"revoked_at"`
	LastUsedAt *time.Time `bun:"last_used_at"`
}

func (r tokenRow) domain() core.Token {
	t := core.Token{ID: r.ID, UserID: r.UserID, Name: r.Name, Hash: r.Hash, Hint: r.Hint, CreatedAt: r.CreatedAt.UTC()}
	if r.RevokedAt != nil {
		at := r.RevokedAt.UTC()
		t.RevokedAt = &at
	}
	if r.LastUsedAt != nil {
		at := r.LastUsedAt.UTC()
		t.LastUsedAt = &at
	}
	return t
}

type sessionRow struct {
	bun.BaseModel `bun:"table:web_sessions"`

	IDHash    string    `bun:"id_hash,pk"`
	UserID    string    `bun:"user_id,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	ExpiresAt time.Time `bun:"expires_at,notnull"`
}

type changeRow struct {
	bun.BaseModel `bun:"table:changes"`

	Seq      int64     `bun:"seq,pk,autoincrement"`
	Entity   string    `bun:"entity,notnull"`
	EntityID string    `bun:"entity_id,notnull"`
	Op       string    `bun:"op,notnull"`
	At       time.Time `bun:"at,notnull"`
}

func (r changeRow) domain() core.Change {
	return core.Change{Seq: r.Seq, Entity: core.Entity(r.Entity), EntityID: r.EntityID, Op: r.Op, At: r.At.UTC()}
}

type feedEventRow struct {
	bun.BaseModel `bun:"table:feed_events"`

	Seq      int64     `bun:"seq,pk,autoincrement"`
	At       time.Time `bun:"at,notnull"`
	ThreatID string    `bun:"threat_id,notnull"`
	Registry *string   `bun:"registry"`
	Kind     string    `bun:"kind,notnull"`
	Version  int       `bun:"version,notnull"`
}

// indicatorRow says that a report lists an indicator of compromise
// (migration 0015): Key is ioc.Key of its type and value.
type indicatorRow struct {
	bun.BaseModel `bun:"table:threat_indicators"`

	Key      string `bun:"key,pk"`
	ThreatID string `bun:"threat_id,pk"`
}

// stixObjectRow maps the id of a STIX object to the report it is published
// for (migration 0011).
type stixObjectRow struct {
	bun.BaseModel `bun:"table:stix_objects"`

	ObjectID string `bun:"object_id,pk"`
	ThreatID string `bun:"threat_id,notnull"`
}

func (r feedEventRow) domain() core.FeedEvent {
	reg := ""
	if r.Registry != nil {
		reg = *r.Registry
	}
	return core.FeedEvent{Seq: r.Seq, At: r.At.UTC(), ThreatID: r.ThreatID, Registry: reg, Kind: r.Kind, Version: r.Version}
}

type threatRow struct {
	bun.BaseModel `bun:"table:threats"`

	ID                 string     `bun:"id,pk"`
	ReportType         string     `bun:"report_type,notnull"`
	ResourceIdentifier string     `bun:"resource_identifier,notnull"`
	Registry           *string    `bun:"registry"`
	CanonicalKey       string     `bun:"canonical_key,notnull"`
	Status             string     `bun:"status,notnull"`
	SubmitterID        *string    `bun:"submitter_id"`
	Revision           int        `bun:"revision,notnull"`
	Version            int        `bun:"version,notnull"`
	Source             *string    `bun:"source"`
	UpstreamID         *string    `bun:"upstream_id"`
	CreatedAt          time.Time  `bun:"created_at,notnull"`
	UpdatedAt          time.Time  `bun:"updated_at,notnull"`
	VerifiedAt         *time.Time `bun:"verified_at"`
	VerifiedBy         *string    `bun:"verified_by"`
	UpstreamModified   *time.Time `bun:"upstream_modified"`
	AllVersions        bool       `bun:"all_versions,notnull"`
	// SeverityLevel is a copy of the details' severity_level (migration
	// 0018), kept with every write of the details, so that browsing by
	// severity is a range of threats_severity_verified_idx.
	SeverityLevel *string `bun:"severity_level"`
	// LegacySTIXIDs is core.Threat's (migration 0021): true for the
	// reports stored before, whose STIX object ids stix_objects lists.
	LegacySTIXIDs bool `bun:"legacy_stix_ids,notnull"`
	// DisputedAt and KeptAt are core.Threat's (migration 0024).
	DisputedAt *time.Time `bun:"disputed_at"`
	KeptAt     *time.Time `bun:"kept_at"`

	Details *detailsRow `bun:"rel:has-one,join:id=threat_id"`
}

// detailsRow is a report's details as stored: ThreatID and every field of
// core.Details, one column each, embedded so that a new field needs no
// change here. bun names a field's column in snake case, which is the
// field's JSON name; optionalDetails checks that and makes bun write an
// absent optional field as NULL, as the columns' CHECKs expect.
type detailsRow struct {
	bun.BaseModel `bun:"table:threat_details"`

	ThreatID string `bun:"threat_id,pk"`
	core.Details
	// IOCs are the report's indicators as the daemon derived them from
	// this content (core.Derive), JSON; NULL only on a database
	// migration 0020 has not reached yet.
	IOCs []ioc.IOC `bun:"iocs"`
}

// optionalDetails prepares bun's model of detailsRow on db: each field of
// core.Details must have the column of its JSON name, and an optional one
// (omitzero) is written as NULL when empty, as a *string was before the
// fields were defined once (bun has no tag for that on an embedded type
// from another package, so the model's field is marked here, once, before
// db runs any query).
func optionalDetails(db *bun.DB) error {
	model, ok := db.NewSelect().Model((*detailsRow)(nil)).GetModel().(bun.TableModel)
	if !ok {
		return fmt.Errorf("storage: bun has no table model for detailsRow")
	}
	table := model.Table()
	for _, f := range core.DetailFields {
		col := table.LookupField(f.Name)
		if col == nil {
			return fmt.Errorf("storage: core.Details field %s has no column %q in bun's model (bun names columns after Go fields in snake case)", f.Name, f.Name)
		}
		col.NullZero = f.Optional
	}
	return nil
}

type eventRow struct {
	bun.BaseModel `bun:"table:review_events"`

	ID         string    `bun:"id,pk"`
	ThreatID   string    `bun:"threat_id,notnull"`
	RevisionID *string   `bun:"revision_id"`
	Action     string    `bun:"action,notnull"`
	FromStatus *string   `bun:"from_status"`
	ToStatus   *string   `bun:"to_status"`
	ActorID    *string   `bun:"actor_id"`
	ActorName  string    `bun:"actor_name,notnull"`
	Note       *string   `bun:"note"`
	At         time.Time `bun:"at,notnull"`
}

// str and deref convert between "" (absent) and NULL.
func str(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func toThreatRow(t core.Threat) (threatRow, detailsRow) {
	return threatRow{
		ID: t.ID, ReportType: string(t.ReportType), ResourceIdentifier: t.ResourceIdentifier, Registry: str(t.Registry),
		CanonicalKey: t.CanonicalKey, Status: string(t.Status), SubmitterID: str(t.SubmitterID), Revision: t.Revision, Version: max(t.Version, 1),
		Source: str(t.Source), UpstreamID: str(t.UpstreamID), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		VerifiedAt: t.VerifiedAt, VerifiedBy: str(t.VerifiedBy), UpstreamModified: t.UpstreamModified, AllVersions: t.AllVersions,
		SeverityLevel: str(string(t.Details.SeverityLevel)), LegacySTIXIDs: t.LegacySTIXIDs, DisputedAt: t.DisputedAt, KeptAt: t.KeptAt,
	}, detailsRow{ThreatID: t.ID, Details: storedDetails(t.Details), IOCs: storedIOCs(t.IOCs)}
}

// storedIOCs returns iocs as storage writes them: never nil, so that NULL
// means "not derived yet".
func storedIOCs(iocs []ioc.IOC) []ioc.IOC {
	if iocs == nil {
		return []ioc.IOC{}
	}
	return iocs
}

func (r threatRow) domain() core.Threat {
	t := core.Threat{
		ID: r.ID, ReportType: core.ReportType(r.ReportType), ResourceIdentifier: r.ResourceIdentifier, Registry: deref(r.Registry),
		CanonicalKey: r.CanonicalKey, Status: core.Status(r.Status), SubmitterID: deref(r.SubmitterID), Revision: r.Revision, Version: r.Version,
		Source: deref(r.Source), UpstreamID: deref(r.UpstreamID), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		VerifiedAt: utcPtr(r.VerifiedAt), VerifiedBy: deref(r.VerifiedBy), UpstreamModified: utcPtr(r.UpstreamModified), AllVersions: r.AllVersions,
		LegacySTIXIDs: r.LegacySTIXIDs, DisputedAt: utcPtr(r.DisputedAt), KeptAt: utcPtr(r.KeptAt),
	}
	if r.Details != nil {
		t.Details = storedDetails(r.Details.Details)
		if len(r.Details.IOCs) > 0 {
			t.IOCs = r.Details.IOCs
		}
	} else if r.SeverityLevel != nil {
		t.Details.SeverityLevel = core.Severity(*r.SeverityLevel) // a listing
	}
	return t
}

func (r eventRow) domain() core.ReviewEvent {
	return core.ReviewEvent{
		ID: r.ID, ThreatID: r.ThreatID, RevisionID: deref(r.RevisionID), Action: r.Action,
		From: core.Status(deref(r.FromStatus)), To: core.Status(deref(r.ToStatus)), ActorID: deref(r.ActorID),
		ActorName: r.ActorName, Note: deref(r.Note), At: r.At.UTC(),
	}
}

type revisionRow struct {
	bun.BaseModel `bun:"table:threat_revisions"`

	ID         string  `bun:"id,pk"`
	ThreatID   string  `bun:"threat_id,notnull"`
	Number     int     `bun:"number,notnull"`
	AuthorID   *string `bun:"author_id"`
	AuthorName string  `bun:"author_name,notnull"`
	State      string  `bun:"state,notnull"`
	// Changes is the patch as the API received it: core.Patch's JSON
	// (absent fields omitted, a list cleared as []).
	Changes   core.Patch `bun:"changes,notnull,type:jsonb"`
	Note      *string    `bun:"note"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	DecidedAt *time.Time `bun:"decided_at"`
	DecidedBy *string    `bun:"decided_by"`
}

func (r revisionRow) domain() core.Revision {
	return core.Revision{
		ID: r.ID, ThreatID: r.ThreatID, Number: r.Number, AuthorID: deref(r.AuthorID), AuthorName: r.AuthorName,
		State: r.State, Patch: r.Changes, Note: deref(r.Note), CreatedAt: r.CreatedAt.UTC(),
		DecidedAt: utcPtr(r.DecidedAt), DecidedBy: deref(r.DecidedBy),
	}
}
