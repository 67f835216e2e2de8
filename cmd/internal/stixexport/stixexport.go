// Package stixexport serves package stix as an exporter plugin: the glue
// between the exporter SDK (gRPC, go-plugin) and the STIX mapping, shared
// by threatd-exporter-stix and threatd-exporter-anomali, so that package
// stix stays a format mapping with no plugin code in it.
package stixexport

import (
	"context"
	"encoding/json"

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
	raw := func(objs []stix.Object) ([]json.RawMessage, error) {
		out := make([]json.RawMessage, len(objs))
		for i, o := range objs {
			b, err := json.Marshal(o)
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
		return out, nil
	}
	var doc core.ObjectsDocument
	var err error
	if doc.Shared, err = raw(stix.SharedObjects(service)); err != nil {
		return sdk.Document{}, err
	}
	doc.Records = make([][]json.RawMessage, len(req.Records))
	for i, r := range req.Records {
		if doc.Records[i], err = raw(stix.RecordObjects(r, service)); err != nil {
			return sdk.Document{}, err
		}
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return sdk.Document{}, err
	}
	return sdk.Document{ContentType: "application/json", Body: body}, nil
}
