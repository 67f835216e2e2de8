package osv

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
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

// Convert is the OSV record of one verified package report (see
// Exportable). A record with several packages upstream is several reports
// here: Merge joins their records again.
func Convert(t core.Threat) Vuln {
	v := Vuln{
		SchemaVersion: SchemaVersion, ID: RecordID(t),
		Summary: t.Details.ThreatDescription, Details: t.Details.PayloadDescription,
		Affected: []VulnAffected{affected(t)},
	}
	modified := t.UpdatedAt
	if t.Source == SourceName && t.UpstreamModified != nil {
		// An imported report is the upstream version it follows: a
		// re-import of the export finds nothing newer. Changes made
		// here show in database_specific.version.
		modified = *t.UpstreamModified
	}
	v.Modified = osvTime(modified)
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
// the layout OSV publishes and osv-scanner reads offline. Records of a
// multi-package upstream record are held until Close and merged; every
// other record is written as it comes.
type ArchiveWriter struct {
	z     *zip.Writer
	held  map[string]*Vuln
	names map[string]bool // the records written
}

// NewArchiveWriter starts an archive on w.
func NewArchiveWriter(w io.Writer) *ArchiveWriter {
	return &ArchiveWriter{z: zip.NewWriter(w), held: map[string]*Vuln{}, names: map[string]bool{}}
}

// Add writes the record of one report (Exportable).
func (w *ArchiveWriter) Add(t core.Threat) error {
	v := Convert(t)
	if t.Source == SourceName && strings.Contains(t.UpstreamID, "/") {
		if h, ok := w.held[v.ID]; ok {
			Merge(h, v)
		} else {
			w.held[v.ID] = &v
		}
		return nil
	}
	return w.write(v)
}

func (w *ArchiveWriter) write(v Vuln) error {
	name := v.ID + ".json"
	if w.names[name] {
		return fmt.Errorf("osv export: two records named %s", v.ID)
	}
	w.names[name] = true
	f, err := w.z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Unix(0, 0).UTC()})
	if err != nil {
		return err
	}
	return json.NewEncoder(f).Encode(v)
}

// Close writes the held records and the archive's directory; it returns
// the number of records written.
func (w *ArchiveWriter) Close() (int, error) {
	ids := make([]string, 0, len(w.held))
	for id := range w.held {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := w.write(*w.held[id]); err != nil {
			return len(w.names), err
		}
	}
	return len(w.names), w.z.Close()
}

// ModifiedIndex collects an ecosystem's modified_id.csv, as OSV's own
// bucket has it beside each all.zip: one "<modified>,<id>" line per record
// (the reports of a record with several packages joined, at their latest
// modified time), newest first.
type ModifiedIndex struct{ latest map[string]string }

// Add adds a verified report (others are left out, as from all.zip).
func (m *ModifiedIndex) Add(t core.Threat) {
	if !Exportable(t) {
		return
	}
	if m.latest == nil {
		m.latest = map[string]string{}
	}
	id, mod := RecordID(t), Convert(t).Modified
	if timeKey(mod) > timeKey(m.latest[id]) {
		m.latest[id] = mod
	}
}

// WriteTo writes the lines, newest first.
func (m *ModifiedIndex) WriteTo(w io.Writer) (int64, error) {
	type line struct{ mod, id string }
	lines := make([]line, 0, len(m.latest))
	for id, mod := range m.latest {
		lines = append(lines, line{mod, id})
	}
	slices.SortFunc(lines, func(a, b line) int {
		if c := strings.Compare(timeKey(b.mod), timeKey(a.mod)); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	cw := &countWriter{w: bufio.NewWriter(w)}
	for _, l := range lines {
		fmt.Fprintf(cw, "%s,%s\n", l.mod, l.id)
	}
	return cw.n, cw.w.Flush()
}

type countWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// timeKey makes RFC 3339 times of varying precision sort as times.
func timeKey(s string) string {
	if s == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000000")
}
