// Command threatd-exporter-csv is the worked example of the exporter SDK: a
// vendor's exporter in one file. It renders verified threats as CSV, one row
// per indicator of compromise. Serve it with exporter_routes:
//
//	exporter_routes:
//	  - {path: /export/csv, exporter: csv, tier: paid}
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"time"

	"github.com/threatd/threatd/plugins/sdk"
)

func main() {
	sdk.ServeExporter("csv", "CSV of verified threats, one row per IOC", export)
}

func export(_ context.Context, req sdk.Request) (sdk.Document, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write([]string{"threat_id", "report_type", "resource_identifier", "registry", "severity", "verified_at", "ioc_type", "ioc_value"})
	for _, r := range req.Records {
		t := r.Threat
		verified := ""
		if t.VerifiedAt != nil {
			verified = t.VerifiedAt.Format(time.RFC3339)
		}
		for _, ioc := range r.IOCs {
			row := []string{t.ID, string(t.ReportType), t.ResourceIdentifier, t.Registry,
				string(t.Details.SeverityLevel), verified, ioc.Type, ioc.Value}
			for i, cell := range row {
				row[i] = neutralise(cell)
			}
			if err := w.Write(row); err != nil {
				return sdk.Document{}, err
			}
		}
	}
	w.Flush()
	return sdk.Document{ContentType: "text/csv; charset=utf-8", Body: buf.Bytes()}, w.Error()
}

// neutralise stops spreadsheet formula injection: a cell starting with
// = + - @ is prefixed with a quote.
func neutralise(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@') {
		return "'" + s
	}
	return s
}
