// Package sdk is what a vendor imports to write a threatd exporter: a
// function from verified threat records to a document, served as a plugin
// process with one call. See docs/plugins/exporters.md and the worked
// example in cmd/threatd-exporter-csv.
//
// A streaming exporter reads the records one by one and writes its document
// as it goes, so any selection, up to every verified report, is exported in
// bounded memory:
//
//	func main() {
//		sdk.ServeStreamingExporter("csv", "CSV of verified threats", func(ctx context.Context, req sdk.Request, records iter.Seq[sdk.Record], w *sdk.Writer) error {
//			w.ContentType = "text/csv"
//			for r := range records {
//				… write r to w …
//			}
//			return nil
//		})
//	}
//
// An exporter that needs every record before it can write (one JSON
// document) uses ServeExporter and returns the document whole.
package sdk

import (
	"context"
	"iter"
	"regexp"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
	"github.com/threatd/threatd/plugins"
)

// Request is an export request: the endpoint and query the client used, the
// service name, and the verified records selected by the daemon.
type Request = plugins.ExportRequest

// Record is one verified threat with its indicators of compromise.
type Record = plugins.ExportRecord

// Document is an exporter's answer: a content type and the body.
type Document = plugins.Document

// Threat and IOC are the record's parts.
type (
	Threat = core.Threat
	Status = core.Status
	IOC    = ioc.IOC
)

// Writer receives a streaming exporter's document: set ContentType before
// the first Write.
type Writer = plugins.DocumentWriter

// StreamFunc writes the document while it reads the records.
type StreamFunc func(ctx context.Context, req Request, records iter.Seq[Record], w *Writer) error

// ServeStreamingExporter runs fn as the streaming exporter plugin called
// name; call it from main.
func ServeStreamingExporter(name, description string, fn StreamFunc) {
	plugins.ServeStreamExporter(name, description, plugins.StreamExporterFunc(fn))
}

// A record's status: verified, or rejected for a report withdrawn since it
// was published (window selections carry withdrawals, so that a consumer
// can revoke what it holds).
const (
	StatusVerified = core.StatusVerified
	StatusRejected = core.StatusRejected
)

// ExportFunc turns a request into a document.
type ExportFunc func(ctx context.Context, req Request) (Document, error)

// ServeExporter runs fn as the exporter plugin called name; call it from
// main. The daemon starts the binary threatd-exporter-<name> from its
// plugin directory.
func ServeExporter(name, description string, fn ExportFunc) {
	plugins.ServeExporter(name, description, plugins.ExporterFunc(fn))
}

// Render runs fn in this process over records and returns the document it
// writes, as the daemon would receive it: test an exporter without
// starting a plugin process (see Example).
func Render(ctx context.Context, fn StreamFunc, req Request, records []Record) (Document, error) {
	return plugins.RenderStream(ctx, plugins.StreamExporterFunc(fn), req, records)
}

// CSVCell makes a value safe for a spreadsheet cell: a value a spreadsheet
// would read as a formula (starting with = + - @, a tab or a carriage
// return) is prefixed with a quote, so that a hostile package name or URL
// in a report cannot run in the analyst's spreadsheet. A scoped npm name
// (@scope/name) is no formula a spreadsheet can run (no function call, no
// DDE) and is what a consumer matches on: it is kept intact.
func CSVCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '\t', '\r':
		return "'" + s
	case '@':
		if scopedName.MatchString(s) {
			return s
		}
		return "'" + s
	}
	return s
}

// scopedName is an npm scoped package name (npm's rules: lower-case URL-safe
// characters, one slash).
var scopedName = regexp.MustCompile(`^@[a-z0-9~-][a-z0-9._~-]*/[a-z0-9~-][a-z0-9._~-]*$`)
