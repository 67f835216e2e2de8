// Package sdk is what a vendor imports to write a threatd exporter: a
// function from verified threat records to a document, served as a plugin
// process with one call. See docs/plugins/exporters.md and the worked
// example in cmd/threatd-exporter-csv.
//
//	func main() {
//		sdk.ServeExporter("csv", "CSV of verified threats", func(ctx context.Context, req sdk.Request) (sdk.Document, error) {
//			…
//			return sdk.Document{ContentType: "text/csv", Body: buf.Bytes()}, nil
//		})
//	}
package sdk

import (
	"context"

	"github.com/threatd/threatd/core"
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
	IOC    = core.IOC
)

// ExportFunc turns a request into a document.
type ExportFunc func(ctx context.Context, req Request) (Document, error)

// ServeExporter runs fn as the exporter plugin called name; call it from
// main. The daemon starts the binary threatd-exporter-<name> from its
// plugin directory.
func ServeExporter(name, description string, fn ExportFunc) {
	plugins.ServeExporter(name, description, plugins.ExporterFunc(fn))
}
