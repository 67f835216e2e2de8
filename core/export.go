package core

import (
	"context"
	"errors"
)

// ExportRecord is one verified threat handed to an exporter.
type ExportRecord struct {
	Threat Threat
	IOCs   []IOC
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
}

// Document is what an exporter returns.
type Document struct {
	ContentType string
	Body        []byte
}

// Exporters is the port to the exporter plugins, by name.
type Exporters interface {
	Export(ctx context.Context, name string, req ExportRequest) (Document, error)
}

// ErrExporterUnavailable means an exporter cannot be started (503).
var ErrExporterUnavailable = errors.New("exporter unavailable")

// ErrExporterTimeout means an exporter is still starting after the bounded
// wait of a request (504).
var ErrExporterTimeout = errors.New("exporter timeout")

// ErrExporterFailed means an exporter failed or crashed during a request (502).
var ErrExporterFailed = errors.New("exporter failed")
