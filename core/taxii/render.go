package taxii

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/threatd/threatd/core"
)

// rendered is the exporter's objects of a page of changes.
type rendered struct {
	shared  []Object
	records [][]Object
}

// renderSplit is the fewest reports render gives each of its two
// concurrent exporter calls: a page of 1,000 objects renders about 250
// reports, and in a full pull one call at a time left a core idle while
// the exporter, then the daemon, worked through them (docs/performance.md).
const renderSplit = 32

// render asks the STIX exporter for the objects of items: in two calls at
// once when there are enough of them, joined in order.
func (x *Service) render(ctx context.Context, items []core.FeedItem) (rendered, error) {
	if len(items) < 2*renderSplit {
		return x.renderPart(ctx, items)
	}
	half := len(items) / 2
	var second rendered
	var secondErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		second, secondErr = x.renderPart(ctx, items[half:])
	}()
	first, err := x.renderPart(ctx, items[:half])
	<-done
	if err == nil {
		err = secondErr
	}
	if err != nil {
		return rendered{}, err
	}
	first.records = append(first.records, second.records...)
	return first, nil
}

// renderPart asks the STIX exporter for the objects of items in one call.
func (x *Service) renderPart(ctx context.Context, items []core.FeedItem) (rendered, error) {
	if x.exporters == nil {
		return rendered{}, &core.ExporterError{Exporter: "stix", Kind: core.ErrExporterUnavailable, Cause: errors.New("no exporters configured")}
	}
	req := core.ExportRequest{Endpoint: "/taxii2/", Query: map[string]string{"format": core.ObjectsFormat}, Service: x.service,
		Records: make([]core.ExportRecord, len(items))}
	for i, it := range items {
		req.Records[i] = core.NewExportRecord(it.Threat, core.CommunityOf(x.Community, it.Threat))
	}
	var buf core.BufferWriter
	if err := x.exporters.Export(ctx, "stix", req, &buf); err != nil {
		return rendered{}, err
	}
	var out rendered
	var err error
	out.shared, out.records, err = readDocument(buf.Bytes(), len(items), func(i int) time.Time { return items[i].Event.At })
	if err != nil {
		return rendered{}, &core.ExporterError{Exporter: "stix", Kind: core.ErrExporterFailed, Cause: fmt.Errorf("objects document: %w", err)}
	}
	return out, nil
}
