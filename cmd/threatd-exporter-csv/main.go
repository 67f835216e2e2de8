// Command threatd-exporter-csv is the worked example of the exporter SDK: a
// vendor's exporter in one file. It renders verified threats as CSV, one row
// per indicator of compromise, streaming: each row is written as its record
// arrives, so a dump of every verified report takes bounded memory. Serve it
// with exporter_routes:
//
//	exporter_routes:
//	  - {path: /export/csv, exporter: csv, tier: paid}              # the latest 100
//	  - {path: /export/csv/all, exporter: csv, tier: paid, select: all} # everything
package main

import (
	"context"
	"encoding/csv"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/threatd/threatd/plugins/sdk"
)

func main() {
	sdk.ServeStreamingExporter("csv", "CSV of verified threats, one row per IOC", export)
}

func export(_ context.Context, _ sdk.Request, records iter.Seq[sdk.Record], out *sdk.Writer) error {
	out.ContentType = "text/csv; charset=utf-8"
	w := csv.NewWriter(out)
	_ = w.Write([]string{"threat_id", "report_type", "resource_identifier", "registry", "severity", "verified_at", "ioc_type", "ioc_value",
		"ioc_detail", "ioc_versions", "ioc_origin", "ioc_confidence"})
	for r := range records {
		t := r.Threat
		if t.Status != sdk.StatusVerified {
			continue // a withdrawn report's indicators are not for blocking
		}
		verified := ""
		if t.VerifiedAt != nil {
			verified = t.VerifiedAt.Format(time.RFC3339)
		}
		for _, ind := range r.IOCs {
			row := []string{t.ID, string(t.ReportType), t.ResourceIdentifier, t.Registry,
				string(t.Details.SeverityLevel), verified, ind.Type, ind.Value,
				ind.Detail, strings.Join(ind.Versions, " "), ind.Origin, strconv.Itoa(ind.Confidence)}
			for i, cell := range row {
				row[i] = sdk.CSVCell(cell)
			}
			if err := w.Write(row); err != nil {
				return err
			}
		}
	}
	w.Flush()
	return w.Error()
}
