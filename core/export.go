package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/threatd/threatd/core/ioc"
)

// ExportRecord is one verified threat handed to an exporter.
type ExportRecord struct {
	Threat Threat
	IOCs   []ioc.IOC
	// Community is what the community says of the report as it is
	// exported: sightings, confidence, dispute, campaigns.
	Community Community
}

// ExportRequest is what an exporter receives.
type ExportRequest struct {
	// Endpoint is the path the client called, e.g. /query-latest-stix.
	Endpoint string
	// Query holds the client's query parameters.
	Query map[string]string
	// Service names the producing service.
	Service string
	Records []ExportRecord
	// Each, when set, streams the records instead of Records: it calls
	// yield with each in turn, and stops at the first error yield returns.
	// A selection of any size (every verified report) is exported this way
	// without being held in memory.
	Each func(yield func(ExportRecord) error) error
}

// ForEach calls yield with each record of the request, from Each or
// Records.
func (r ExportRequest) ForEach(yield func(ExportRecord) error) error {
	if r.Each != nil {
		return r.Each(yield)
	}
	for _, rec := range r.Records {
		if err := yield(rec); err != nil {
			return err
		}
	}
	return nil
}

// ExportWriter receives a document as the exporter produces it: Start once
// with the content type before the first Write.
type ExportWriter interface {
	Start(contentType string) error
	io.Writer
}

// Document is what an exporter returns.
type Document struct {
	ContentType string
	Body        []byte
}

// Exporters is the port to the exporter plugins, by name: the records go
// to the exporter and the document comes back to w as they are produced.
// A failure of the exporter itself is an *ExporterError.
type Exporters interface {
	Export(ctx context.Context, name string, req ExportRequest, w ExportWriter) error
}

// ErrExporterUnavailable means an exporter cannot be started (503).
var ErrExporterUnavailable = errors.New("exporter unavailable")

// ErrExporterTimeout means an exporter is still starting after the bounded
// wait of a request (504).
var ErrExporterTimeout = errors.New("exporter timeout")

// ErrExporterFailed means an exporter failed or crashed during a request (502).
var ErrExporterFailed = errors.New("exporter failed")

// ExporterError is a failure of the named exporter: Kind is
// ErrExporterUnavailable, ErrExporterTimeout or ErrExporterFailed; the
// cause (plugin paths, process errors) is for the log only.
type ExporterError struct {
	Exporter string
	Kind     error
	Cause    error
}

func (e *ExporterError) Error() string {
	return fmt.Sprintf("exporter %q: %v: %v", e.Exporter, e.Kind, e.Cause)
}

// Unwrap exposes the kind and the cause to errors.Is.
func (e *ExporterError) Unwrap() []error { return []error{e.Kind, e.Cause} }

// ObjectsFormat, as an export request's "format" query value, asks a STIX
// exporter for each record's objects apart instead of one bundle: the
// answer is an ObjectsDocument in JSON (TAXII serves the objects in pages).
const ObjectsFormat = "stix-objects"

// ObjectsDocument is a STIX exporter's answer in ObjectsFormat: the objects
// every record refers to (the service's identity, the marking), and the
// objects of each record, in the request's order.
type ObjectsDocument struct {
	Shared  []json.RawMessage   `json:"shared"`
	Records [][]json.RawMessage `json:"records"`
}

// OSVRecordsFormat, as an export request's "format" query value, asks the
// OSV exporter for {"vulns": [...]}: the OSV records of the request's
// reports as JSON (the OSV query API).
const OSVRecordsFormat = "osv-records"

// BufferWriter collects an exporter's document in memory (a small one:
// a page of objects, a few OSV records).
type BufferWriter struct{ bytes.Buffer }

// Start implements ExportWriter.
func (*BufferWriter) Start(string) error { return nil }

// Adopt makes b the buffer's bytes, without copying them, when it holds
// none yet, and reports whether it did: the caller gives b up. A document
// that comes in one message (most of the STIX exporter's renderings for
// TAXII) is then not copied a second time.
func (w *BufferWriter) Adopt(b []byte) bool {
	if w.Len() > 0 || w.Cap() > 0 {
		return false
	}
	w.Buffer = *bytes.NewBuffer(b)
	return true
}

// Adopter is an ExportWriter that can take a chunk of the document
// without copying it (BufferWriter.Adopt).
type Adopter interface {
	Adopt(b []byte) bool
}

// CampaignRef names a campaign a report belongs to, as its record shows it
// (STIX also gets its description and times).
type CampaignRef struct {
	ID, Name, Description string
	CreatedAt, UpdatedAt  time.Time
}

// Community is what the community says of a verified report besides its
// content (docs/api/records.md, "Community signals"): its sightings, its
// confidence, its open dispute and its campaigns. It changes without the
// report changing, so the daemon keeps it apart (core/community) and adds
// it to a record as it answers.
type Community struct {
	Sightings SightingCounts
	// Confidence is 0..100 (Confidence).
	Confidence int
	// Disputed: false-positive votes have put the report back in the
	// review queue and no reviewer has decided yet.
	Disputed  bool
	Campaigns []CampaignRef
	// ChangedAt is when any of it last changed (zero: never since the
	// report was published); STIX objects that carry it are modified then.
	ChangedAt time.Time
}

// ConfidenceInput is what a report's confidence is worked out from.
type ConfidenceInput struct {
	// Seen is the seen sightings' weight (SightingCounts.Weight): each
	// sighting counts up to SeenWeightCap, the submitter's own not at all.
	Seen int64
	// Votes counts the false-positive votes counted since the report's
	// last review decision (the submitter's own excluded).
	Votes int
	// Disputed: a dispute is open.
	Disputed bool
	// Record is the submitter's track record, -20..20
	// (SubmitterRecord.Score); 0 for an imported report or a newcomer.
	Record int
}

// Confidence is how sure the service is that a verified report is right,
// 0..100 (docs/api/records.md, "Confidence"): 50 for a reviewer's
// verification, plus the submitter's record (-20..20), plus 10 per tenfold
// of seen sightings' weight (log10(1+weight)*10, at most 30: one sighting
// moves it by at most 10, three or more people's are needed for the
// most), less 10 per counted
// false-positive vote (at most 30) and 20 more while a dispute is open.
func Confidence(in ConfidenceInput) int {
	c := 50.0 + float64(max(-20, min(20, in.Record)))
	if in.Seen > 0 {
		c += min(30, 10*math.Log10(1+float64(in.Seen)))
	}
	c -= float64(min(30, 10*in.Votes))
	if in.Disputed {
		c -= 20
	}
	return int(math.Round(max(0, min(100, c))))
}

// Score is a submitter's track record as confidence counts it, -20..20:
// 20 × (verified − rejected) / (verified + rejected + 5), so that a
// newcomer starts near 0 and one report moves it little.
func (r SubmitterRecord) Score() int {
	if r.Verified < 0 || r.Rejected < 0 {
		return 0
	}
	return int(math.Round(20 * float64(r.Verified-r.Rejected) / float64(r.Verified+r.Rejected+5)))
}

// Communities say what the community says of reports (core/community's
// View in the daemon).
type Communities interface {
	OfThreat(t Threat) Community
}

// BaseCommunity is what is said of a report before anyone said anything:
// no sightings, the base confidence.
func BaseCommunity(t Threat) Community {
	return Community{Sightings: SightingCounts{ThreatID: t.ID}, Confidence: Confidence(ConfidenceInput{})}
}

// CommunityOf is src's word on t (BaseCommunity when src is nil).
func CommunityOf(src Communities, t Threat) Community {
	if src == nil {
		return BaseCommunity(t)
	}
	return src.OfThreat(t)
}

// SightingCounts are a report's sightings summed by type, with the latest
// seen one.
type SightingCounts struct {
	ThreatID                     string
	Seen, FalsePositive, Expired int64
	LastSeen                     time.Time
	// UpdatedAt is when the counts last changed (zero when unknown: rows
	// older than the column).
	UpdatedAt time.Time
	// Votes counts the false-positive votes since the report's last
	// review decision, its submitter's own left out; Disputed is set
	// while they have put it back in review.
	Votes    int64
	Disputed bool
	// Weight is the seen sightings as confidence counts them: each
	// sighting's count up to SeenWeightCap (SeenWeight), the report's
	// submitter's own left out.
	Weight int64
}

// Any says whether there is any sighting.
func (c SightingCounts) Any() bool { return c.Seen > 0 || c.FalsePositive > 0 || c.Expired > 0 }
