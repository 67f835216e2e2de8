package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core/ioc"
)

// Revision states.
const (
	RevisionPending  = "pending"  // waits for a reviewer
	RevisionApproved = "approved" // applied by a reviewer
	RevisionRejected = "rejected" // refused by a reviewer
	RevisionApplied  = "applied"  // the owner's edit of a pending report, applied at once
)

// Revision is one proposed change to a report, kept whatever its fate.
type Revision struct {
	ID         string
	ThreatID   string
	Number     int
	AuthorID   string
	AuthorName string
	State      string
	// Patch holds the fields the author gave; nil fields are unchanged.
	Patch     Patch
	Note      string
	CreatedAt time.Time
	DecidedAt *time.Time
	DecidedBy string
}

// Modification is a change request as storage applies it.
type Modification struct {
	ThreatID   string
	AuthorID   string
	AuthorName string
	Patch      Patch
	// BaseRevision is the report revision the patch was validated against.
	BaseRevision int
	At           time.Time
	// Version is the content version the change was merged onto, and
	// IOCs the indicators of the merged content (Derive); storage refuses
	// the change with ErrStale when the report is no longer at Version.
	Version int
	IOCs    []ioc.IOC
	// Policy is the hourly limit the author is held to (revisions count).
	Policy SubmitPolicy
}

// RevisionDecision is a reviewer's decision on a pending revision.
type RevisionDecision struct {
	RevisionID string
	Approve    bool
	Note       string
	ActorID    string
	ActorName  string
	At         time.Time
	// Version and IOCs, for an approval: the content version the
	// revision was merged onto and the merged content's indicators
	// (Derive); storage refuses the approval with ErrStale when the report
	// is no longer at Version.
	Version int
	IOCs    []ioc.IOC
}

// Patch is a change to a report (PUT /modify-threat-report, a revision): the
// submit fields it replaces, and evidence it adds to the report's own.
type Patch struct {
	Submission
	// EvidenceReferencesAdd lists evidence URLs, separated by |, appended to
	// the report's evidence_references (after any replacement the patch
	// gives) when the patch applies, so that adding evidence never loses the
	// links a reviewer approved meanwhile. URLs the report lists already are
	// not repeated.
	EvidenceReferencesAdd *string `json:"evidence_references_add,omitzero"`
}

// evidenceAddField is EvidenceReferencesAdd's JSON name.
const evidenceAddField = "evidence_references_add"

// ApplyPatch merges patch onto t (given fields replace, others stay; an
// empty string or array clears a field; evidence_references_add appends)
// and validates the result as a submission. The identity fields
// (report_type, resource_identifier, registry) may be repeated but not
// changed.
func ApplyPatch(t Threat, patch Patch, now time.Time) (Threat, error) {
	if patch.ReportType != nil && strings.TrimSpace(*patch.ReportType) != string(t.ReportType) {
		return Threat{}, Invalid("report_type", "cannot be changed (the report is a %s report)", t.ReportType)
	}
	if patch.Registry != nil {
		if r, err := ParseRegistry("registry", *patch.Registry); err != nil || r != t.Registry {
			return Threat{}, Invalid("registry", "cannot be changed (the report's registry is %q)", t.Registry)
		}
	}
	if patch.ResourceIdentifier != nil {
		if k, err := CanonicalKey(t.ReportType, t.Registry, *patch.ResourceIdentifier); err != nil || k != t.CanonicalKey {
			return Threat{}, Invalid("resource_identifier", "cannot be changed (the report is about %q)", t.ResourceIdentifier)
		}
	}
	m := t.AsSubmission()
	for _, f := range SubmitFields {
		if !f.Identity && f.Given(&patch.Submission) {
			f.copyTo(&m, &patch.Submission)
		}
	}
	if patch.EvidenceReferencesAdd != nil {
		all, err := addEvidence(m.EvidenceReferences, *patch.EvidenceReferencesAdd)
		if err != nil {
			return Threat{}, err
		}
		m.EvidenceReferences = &all
	}
	if patch.ThreatDescription != nil && strings.TrimSpace(*patch.ThreatDescription) == "" {
		return Threat{}, Invalid("threat_description", "cannot be emptied: it is required")
	}
	// A version list the patch leaves alone is not checked again: an
	// imported list may hold spellings submit would refuse today.
	keepVersions := patch.VersionInfo == nil
	if keepVersions {
		m.VersionInfo = nil
	}
	merged, err := NewThreat(m, now)
	if err != nil {
		return Threat{}, err
	}
	out := t
	out.Details = merged.Details
	if keepVersions {
		out.Details.VersionInfo = t.Details.VersionInfo
	}
	return out, nil
}

// PatchIsEmpty reports whether a patch changes nothing at all (identity
// fields, which cannot change, do not count).
func PatchIsEmpty(p Patch) bool {
	if p.EvidenceReferencesAdd != nil {
		return false
	}
	for _, f := range SubmitFields {
		if !f.Identity && f.Given(&p.Submission) {
			return false
		}
	}
	return true
}

// PatchFields names the fields a patch gives, by their JSON names, in the
// order of Submission, evidence_references_add last ([] when none).
func PatchFields(p Patch) []string {
	out := []string{}
	for _, f := range SubmitFields {
		if f.Given(&p.Submission) {
			out = append(out, f.Name)
		}
	}
	if p.EvidenceReferencesAdd != nil {
		out = append(out, evidenceAddField)
	}
	return out
}

// ProposedChanges lists what patch would change in t, field by field (a
// pending revision as a reviewer reads it); an error when the patch no
// longer applies to t.
func ProposedChanges(t Threat, patch Patch) ([]FieldChange, error) {
	proposed, err := ApplyPatch(t, patch, time.Now())
	if err != nil {
		return nil, err
	}
	return Diff(t.Details, proposed.Details), nil
}

// FieldChange is one field of a revision's diff.
type FieldChange struct {
	Field    string
	Old, New string
}

// Diff lists the submit fields that differ between two versions of a
// report, by their JSON names.
func Diff(old, new Details) []FieldChange {
	a, b := Threat{Details: old}.AsSubmission(), Threat{Details: new}.AsSubmission()
	var out []FieldChange
	for _, f := range SubmitFields {
		if f.Identity {
			continue
		}
		if o, n := f.display(&a), f.display(&b); o != n {
			out = append(out, FieldChange{Field: f.Name, Old: o, New: n})
		}
	}
	return out
}

// Modify validates a change to a report and stores it: the owner's change to
// a pending report applies at once; any other change waits for review as a
// pending revision. It counts toward the caller's hourly limit.
func (r *Reports) Modify(ctx context.Context, p Principal, threatID string, patch Patch) (Threat, Revision, error) {
	if _, err := uuid.Parse(threatID); err != nil {
		return Threat{}, Revision{}, Invalid("threat_id", "must be a UUID (got %q)", threatID)
	}
	for attempt := 0; ; attempt++ {
		now := r.now().UTC().Truncate(time.Microsecond)
		cur, err := r.store.GetThreat(ctx, threatID)
		if err != nil {
			return Threat{}, Revision{}, err
		}
		if cur.Status == StatusRejected {
			return Threat{}, Revision{}, &ConflictError{What: "threat", Key: threatID, Message: "This report was rejected and cannot be modified"}
		}
		// Identity fields and values first, so an attempt to change them is named.
		merged, err := Merged(cur, patch, now)
		if err != nil {
			return Threat{}, Revision{}, err
		}
		if PatchIsEmpty(patch) {
			return Threat{}, Revision{}, Invalid("", "nothing to change: give at least one field besides threat_id")
		}
		// The identity fields may be repeated but never change: the
		// revision keeps what it changes.
		patch.ReportType, patch.ResourceIdentifier, patch.Registry = nil, nil, nil
		m, err := r.store.ModifyThreat(ctx, Modification{
			ThreatID: threatID, AuthorID: p.User.ID, AuthorName: p.User.Name, Patch: patch, BaseRevision: cur.Revision, At: now,
			Version: cur.Version, IOCs: merged.IOCs, Policy: SubmitPolicy{HourlyLimit: r.HourlyLimit(p.User), Now: now},
		})
		if errors.Is(err, ErrStale) && attempt < 3 {
			continue // the report changed under us: validate again against the new version
		}
		return m.Threat, m.Revision, err
	}
}

// ErrStale means the report changed since the caller read it.
var ErrStale = errors.New("the report changed concurrently")

// DecideRevision approves or rejects a pending revision. actor is nil for the
// built-in reviewer.
func (r *Reports) DecideRevision(ctx context.Context, revisionID string, approve bool, note string, actor *User) (Threat, Revision, error) {
	if _, err := uuid.Parse(revisionID); err != nil {
		return Threat{}, Revision{}, Invalid("revision", "%q is not a revision id", revisionID)
	}
	if !approve && strings.TrimSpace(note) == "" {
		return Threat{}, Revision{}, Invalid("note", "a note is required to reject a revision")
	}
	if err := ValidateText("note", note, 2000); err != nil {
		return Threat{}, Revision{}, err
	}
	d := RevisionDecision{RevisionID: revisionID, Approve: approve, Note: note, ActorName: SystemReviewer, At: r.now().UTC().Truncate(time.Microsecond)}
	if actor != nil {
		if !actor.Role.CanReview() {
			return Threat{}, Revision{}, fmt.Errorf("%w: %s has the role %s; only reviewers and admins may review", ErrForbidden, actor.Email, actor.Role)
		}
		d.ActorID, d.ActorName = actor.ID, actor.Name
	}
	for attempt := 0; ; attempt++ {
		if approve {
			// The approved change applies to the report as it is now:
			// its indicators are derived from that merge, and storage
			// refuses them (ErrStale) if the report changes meanwhile.
			rev, err := r.store.GetRevision(ctx, revisionID)
			if err != nil {
				return Threat{}, Revision{}, err
			}
			cur, err := r.store.GetThreat(ctx, rev.ThreatID)
			if err != nil {
				return Threat{}, Revision{}, err
			}
			merged, err := Merged(cur, rev.Patch, d.At)
			if err != nil {
				return Threat{}, Revision{}, err
			}
			d.Version, d.IOCs = cur.Version, merged.IOCs
		}
		m, err := r.store.DecideRevision(ctx, d)
		if errors.Is(err, ErrStale) && attempt < 3 {
			continue
		}
		return m.Threat, m.Revision, err
	}
}
