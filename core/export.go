package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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
