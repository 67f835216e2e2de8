// Package stixexport serves package stix as an exporter plugin: the glue
// between the exporter SDK (gRPC, go-plugin) and the STIX mapping, shared
// by threatd-exporter-stix and threatd-exporter-anomali, so that package
// stix stays a format mapping with no plugin code in it.
package stixexport

import (
	"context"

	"github.com/threatd/threatd/plugins/sdk"
	"github.com/threatd/threatd/stix"
)

// Exporter returns an exporter that renders the records as one bundle;
// bundleKey distinguishes the bundles of different endpoints.
func Exporter(bundleKey func(sdk.Request) string) sdk.ExportFunc {
	return func(_ context.Context, req sdk.Request) (sdk.Document, error) {
		body, err := stix.NewBundle(req.Records, stix.Options{Service: req.Service, BundleKey: bundleKey(req)}).Marshal()
		if err != nil {
			return sdk.Document{}, err
		}
		return sdk.Document{ContentType: stix.ContentType, Body: body}, nil
	}
}
