package osv

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/threatd/threatd/core"
)

// SchemaVersion is the OSV schema version the export follows.
const SchemaVersion = "1.7.0"

// Vuln is an OSV record as threatd writes it (the OSV schema's names).
type Vuln struct {
	SchemaVersion    string          `json:"schema_version"`
	ID               string          `json:"id"`
	Modified         string          `json:"modified"`
	Published        string          `json:"published,omitempty"`
	Summary          string          `json:"summary,omitempty"`
	Details          string          `json:"details,omitempty"`
	Affected         []VulnAffected  `json:"affected"`
	References       []Reference     `json:"references,omitempty"`
	Credits          []Credit        `json:"credits,omitempty"`
	DatabaseSpecific json.RawMessage `json:"database_specific,omitempty"`
}

// VulnAffected is one affected package of a written record.
type VulnAffected struct {
	Package  AffectedPackage `json:"package"`
	Ranges   []Range         `json:"ranges,omitempty"`
	Versions []string        `json:"versions,omitempty"`
	// DatabaseSpecific carries the threatd report this entry comes from.
	DatabaseSpecific json.RawMessage `json:"database_specific,omitempty"`
}

// AffectedPackage names a package.
type AffectedPackage struct {
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
	Purl      string `json:"purl,omitempty"`
}

// Range is an affected range.
type Range struct {
	Type   string       `json:"type"`
	Events []RangeEvent `json:"events"`
}

// RangeEvent is an event of a range.
type RangeEvent struct {
	Introduced string `json:"introduced,omitempty"`
}

// Credit is a credited person or organisation.
type Credit struct {
	Name string `json:"name"`
}

// Exportable reports whether a verified report has an OSV record: a
// package report of a registry OSV has an ecosystem for.
func Exportable(t core.Threat) bool { return core.HasOSVRecord(t) }

// RecordID is the id of a report's OSV record (core.OSVRecordOf).
func RecordID(t core.Threat) string { return core.OSVRecordOf(t) }

func osvTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// rangeType is the range type for an "every version" range: SEMVER where
// the ecosystem's versions are semantic versions, ECOSYSTEM elsewhere.
func rangeType(registry string) string {
	switch registry {
	case core.RegistryNPM, core.RegistryCrates, core.RegistryGo:
		return "SEMVER"
	}
	return "ECOSYSTEM"
}

// reportFields are a report's threatd fields, under database_specific.
type reportFields struct {
	ThreatdID     string         `json:"threatd_id"`
	ReportType    string         `json:"report_type"`
	Registry      string         `json:"registry"`
	SeverityLevel *core.Severity `json:"severity_level"`
	Tags          []string       `json:"tags"`
	Publisher     *string        `json:"publisher"`
	FirstSeen     *string        `json:"first_seen"`
	LastSeen      *string        `json:"last_seen"`
	DownloadCount *int64         `json:"download_count"`
	VerifiedAt    *string        `json:"verified_at"`
	VerifiedBy    *string        `json:"verified_by"`
	Version       int            `json:"version"`
	Source        *string        `json:"source"`
	UpstreamID    *string        `json:"upstream_id"`
}

func ptr[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func timePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := osvTime(*t)
	return &s
}

// affected is the affected entry of one report: its versions from
// version_info, or every version (a range from 0 with no fix) when it
// names none or affects all.
func affected(t core.Threat) VulnAffected {
	a := VulnAffected{Package: AffectedPackage{Ecosystem: core.OSVEcosystems[t.Registry], Name: t.ResourceIdentifier, Purl: core.PackagePurl(t.Registry, t.ResourceIdentifier)}}
	versions := core.AffectedVersions(t)
	if versions == nil {
		a.Ranges = []Range{{Type: rangeType(t.Registry), Events: []RangeEvent{{Introduced: "0"}}}}
		if t.AllVersions && t.Details.VersionInfo != "" {
			// An imported record's own list, kept beside the range.
			for v := range strings.SplitSeq(t.Details.VersionInfo, ",") {
				if v = strings.TrimSpace(v); v != "" {
					a.Versions = append(a.Versions, v)
				}
			}
		}
	} else {
		a.Versions = versions
	}
	tags := t.Details.Tags
	if tags == nil {
		tags = []string{}
	}
	ds, _ := json.Marshal(reportFields{
		ThreatdID: t.ID, ReportType: string(t.ReportType), Registry: t.Registry,
		SeverityLevel: ptr(t.Details.SeverityLevel), Tags: tags, Publisher: ptr(t.Details.Publisher),
		FirstSeen: timePtr(t.Details.FirstSeen), LastSeen: timePtr(t.Details.LastSeen), DownloadCount: t.Details.DownloadCount,
		VerifiedAt: timePtr(t.VerifiedAt), VerifiedBy: ptr(t.VerifiedBy), Version: t.Version,
		Source: ptr(t.Source), UpstreamID: ptr(t.UpstreamID),
	})
	a.DatabaseSpecific = ds
	return a
}

// modifiedOf is the time of a report's record: an imported report is the
// upstream version it follows (a re-import of the export finds nothing
// newer; changes made here show in database_specific.version), a community
// report its last change.
func modifiedOf(t core.Threat) time.Time {
	if t.Source == SourceName && t.UpstreamModified != nil {
		return *t.UpstreamModified
	}
	return t.UpdatedAt
}

// Convert is the OSV record of one verified package report (see
// Exportable). A record with several packages upstream is several reports
// here: Merge joins their records again.
func Convert(t core.Threat) Vuln {
	v := Vuln{
		SchemaVersion: SchemaVersion, ID: RecordID(t),
		Summary: t.Details.ThreatDescription, Details: t.Details.PayloadDescription,
		Affected: []VulnAffected{affected(t)},
	}
	v.Modified = osvTime(modifiedOf(t))
	if t.VerifiedAt != nil {
		v.Published = osvTime(*t.VerifiedAt)
	}
	if u := strings.TrimSpace(t.Details.OSVAdvisoryURL); u != "" {
		v.References = append(v.References, Reference{Type: "ADVISORY", URL: u})
	}
	for u := range strings.SplitSeq(t.Details.EvidenceReferences, "|") {
		if u = strings.TrimSpace(u); u != "" && u != t.Details.OSVAdvisoryURL {
			v.References = append(v.References, Reference{Type: "EVIDENCE", URL: u})
		}
	}
	for _, c := range t.Details.Contributors {
		v.Credits = append(v.Credits, Credit{Name: c})
	}
	v.DatabaseSpecific = json.RawMessage(`{"source":"threatd"}`)
	return v
}

// Merge adds the affected packages of b (a record of the same id) to a:
// the latest modified time wins.
func Merge(a *Vuln, b Vuln) {
	a.Affected = append(a.Affected, b.Affected...)
	if b.Modified > a.Modified {
		a.Modified = b.Modified
	}
}

// ArchiveWriter writes one ecosystem's all.zip: one <id>.json per record,
// the layout OSV publishes and osv-scanner reads offline. Every record is
// written as it comes, except the reports of a multi-package upstream
// record: those are kept in a temporary file, their ids and places in it
// sorted on disk, and merged at Close. Memory stays flat
// whatever the size of the export: the archive's directory is spooled to a
// temporary file (zipWriter), and the names written are checked for a
// duplicate by sorting them on disk (spill), not kept in a set.
type ArchiveWriter struct {
	z     *zipWriter
	err   error
	held  *spill   // the parts of multi-package records: id → their place in parts
	parts *os.File // those parts as JSON, one after another (unlinked)
	at    int64    // parts' size
	names *spill   // every name written
	n     int
}

// NewArchiveWriter starts an archive on w. Close or Discard it.
func NewArchiveWriter(w io.Writer) *ArchiveWriter {
	z, err := newZipWriter(w)
	return &ArchiveWriter{z: z, err: err, held: newSpill(spillChunk), names: newSpill(spillChunk)}
}

// Add writes the record of one report (Exportable).
func (w *ArchiveWriter) Add(t core.Threat) error {
	if w.err != nil {
		return w.err
	}
	v := Convert(t)
	if t.Source == SourceName && strings.Contains(t.UpstreamID, "/") {
		return w.hold(v)
	}
	return w.write(v)
}

// hold appends a part of a multi-package record to the parts file, and
// its id and place to the sort. A part can be as large as an imported
// record (core.MaxImportRecordBytes), so the sort holds only ids and
// places, each a few hundred bytes at most.
func (w *ArchiveWriter) hold(v Vuln) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if w.parts == nil {
		f, err := os.CreateTemp("", "threatd-osv-parts-*")
		if err != nil {
			return fmt.Errorf("osv export: parts of multi-package records: %w", err)
		}
		_ = os.Remove(f.Name()) // gone with the descriptor, however the export ends
		w.parts = f
	}
	if _, err := w.parts.Write(b); err != nil {
		return fmt.Errorf("osv export: parts of multi-package records: %w", err)
	}
	// Fixed width: a record's parts sort in the order they came.
	place := fmt.Sprintf("%016x%08x", w.at, len(b))
	w.at += int64(len(b))
	return w.held.add(v.ID, place)
}

// part reads a held part back from its place.
func (w *ArchiveWriter) part(place string) (Vuln, error) {
	var at, n int64
	if _, err := fmt.Sscanf(place, "%016x%08x", &at, &n); err != nil {
		return Vuln{}, fmt.Errorf("osv export: a damaged place %q: %w", place, err)
	}
	b := make([]byte, n)
	if _, err := w.parts.ReadAt(b, at); err != nil {
		return Vuln{}, fmt.Errorf("osv export: parts of multi-package records: %w", err)
	}
	var v Vuln
	err := json.Unmarshal(b, &v)
	return v, err
}

func (w *ArchiveWriter) write(v Vuln) error {
	name := v.ID + ".json"
	if err := w.names.add(name, ""); err != nil {
		return err
	}
	f, err := w.z.create(name)
	if err != nil {
		return err
	}
	w.n++
	return json.NewEncoder(f).Encode(v)
}

// Close writes the held records (merged, in id order) and the archive's
// directory, once no two records share a name; it returns the number of
// records written.
func (w *ArchiveWriter) Close() (int, error) {
	defer w.Discard()
	if w.err != nil {
		return w.n, w.err
	}
	var cur *Vuln
	flush := func() error {
		if cur == nil {
			return nil
		}
		err := w.write(*cur)
		cur = nil
		return err
	}
	err := w.held.sorted(func(p pair) error {
		v, err := w.part(p.value)
		if err != nil {
			return err
		}
		if cur != nil && cur.ID == v.ID {
			Merge(cur, v)
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		cur = &v
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return w.n, err
	}
	last := ""
	if err := w.names.sorted(func(p pair) error {
		if p.key == last {
			return fmt.Errorf("osv export: two records named %s", strings.TrimSuffix(p.key, ".json"))
		}
		last = p.key
		return nil
	}); err != nil {
		return w.n, err
	}
	return w.n, w.z.close()
}

// Discard releases what an archive that will not be closed holds (its
// temporary files); after Close it does nothing.
func (w *ArchiveWriter) Discard() {
	w.held.discard()
	if w.parts != nil {
		w.parts.Close()
		w.parts = nil
	}
	w.names.discard()
	if w.z != nil {
		w.z.discard()
	}
}
