// Package stixexport serves package stix as an exporter plugin: the glue
// between the exporter SDK (gRPC, go-plugin) and the STIX mapping, shared
// by threatd-exporter-stix and threatd-exporter-anomali, so that package
// stix stays a format mapping with no plugin code in it.
package stixexport

import (
	"context"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/plugins/sdk"
	"github.com/threatd/threatd/stix"
)

// Exporter returns an exporter that renders the records as one bundle;
// bundleKey distinguishes the bundles of different endpoints.
func Exporter(bundleKey func(sdk.Request) string) sdk.ExportFunc {
	return func(_ context.Context, req sdk.Request) (sdk.Document, error) {
		if req.Query["format"] == core.ObjectsFormat {
			return objects(req)
		}
		body, err := stix.NewBundle(req.Records, stix.Options{Service: req.Service, BundleKey: bundleKey(req)}).Marshal()
		if err != nil {
			return sdk.Document{}, err
		}
		return sdk.Document{ContentType: stix.ContentType, Body: body}, nil
	}
}

// objects answers a request in core.ObjectsFormat: each record's objects
// apart, for the daemon's TAXII collections.
func objects(req sdk.Request) (sdk.Document, error) {
	service := req.Service
	if service == "" {
		service = "threatd"
	}
	// The document is written as it is rendered: the shared objects by
	// stix.AppendJSON, each record's straight to JSON by
	// stix.AppendRecordObjects, all into one buffer.
	body := append(make([]byte, 0, 2048*(len(req.Records)+1)), `{"shared":[`...)
	for i, o := range stix.SharedObjects(service) {
		if i > 0 {
			body = append(body, ',')
		}
		var err error
		if body, err = stix.AppendJSON(body, o); err != nil {
			return sdk.Document{}, err
		}
	}
	body = append(body, `],"records":[`...)
	identity := stix.IdentityID(service)
	for i, r := range req.Records {
		if i > 0 {
			body = append(body, ',')
		}
		body = stix.AppendRecordObjects(body, r, identity)
	}
	body = append(body, "]}"...)
	return sdk.Document{ContentType: "application/json", Body: body}, nil
}
