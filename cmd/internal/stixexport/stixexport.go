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
	// The document is written as it is rendered: each object by
	// stix.AppendJSON into one buffer, instead of marshalling each object
	// and then the document, which compacted every object's bytes again.
	list := func(b []byte, objs []stix.Object) ([]byte, error) {
		b = append(b, '[')
		var err error
		for i, o := range objs {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = stix.AppendJSON(b, o); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	body, err := list(append(make([]byte, 0, 2048*(len(req.Records)+1)), `{"shared":`...), stix.SharedObjects(service))
	if err != nil {
		return sdk.Document{}, err
	}
	body = append(body, `,"records":[`...)
	for i, r := range req.Records {
		if i > 0 {
			body = append(body, ',')
		}
		if body, err = list(body, stix.RecordObjects(r, service)); err != nil {
			return sdk.Document{}, err
		}
	}
	body = append(body, "]}"...)
	return sdk.Document{ContentType: "application/json", Body: body}, nil
}
