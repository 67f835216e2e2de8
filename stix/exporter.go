package stix

import (
	"context"

	"github.com/threatd/threatd/plugins/sdk"
)

// ContentType is the media type of STIX 2.1 bundles.
const ContentType = "application/stix+json;version=2.1"

// Exporter returns an exporter that renders the records as one bundle;
// bundleKey distinguishes the bundles of different endpoints.
func Exporter(bundleKey func(sdk.Request) string) sdk.ExportFunc {
	return func(_ context.Context, req sdk.Request) (sdk.Document, error) {
		records := make([]Record, len(req.Records))
		for i, r := range req.Records {
			records[i] = Record{Threat: r.Threat, IOCs: r.IOCs}
		}
		body, err := NewBundle(records, Options{Service: req.Service, BundleKey: bundleKey(req)}).Marshal()
		if err != nil {
			return sdk.Document{}, err
		}
		return sdk.Document{ContentType: ContentType, Body: body}, nil
	}
}
