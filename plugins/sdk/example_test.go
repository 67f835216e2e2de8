package sdk_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"iter"
	"strconv"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
	"github.com/threatd/threatd/plugins/sdk"
)

// exportIOCs is the exporter of docs/plugins/exporters.md (the page quotes
// it, and docs/snippets_test.go fails when they differ). A plugin's main
// serves it:
//
//	sdk.ServeStreamingExporter("iocs", "CSV of verified threats, one row per IOC", exportIOCs)
func exportIOCs(_ context.Context, _ sdk.Request, records iter.Seq[sdk.Record], out *sdk.Writer) error {
	out.ContentType = "text/csv; charset=utf-8" // before the first write
	w := csv.NewWriter(out)
	if err := w.Write([]string{"threat_id", "ioc_type", "ioc_value", "ioc_origin", "ioc_confidence"}); err != nil {
		return err
	}
	for r := range records { // the records the route selects
		if r.Threat.Status != sdk.StatusVerified {
			continue // withdrawn (window selections carry them)
		}
		for _, ioc := range r.IOCs { // re-fanged indicators, the resource first
			// CSVCell: a hostile value must not run as a spreadsheet formula.
			row := []string{r.Threat.ID, ioc.Type, sdk.CSVCell(ioc.Value), ioc.Origin, strconv.Itoa(ioc.Confidence)}
			if err := w.Write(row); err != nil {
				return err
			}
		}
	}
	w.Flush()
	return w.Error()
}

// Render runs an exporter in the test process, as the daemon would call it.
func Example() {
	records := []sdk.Record{
		{Threat: sdk.Threat{ID: "t1", Status: sdk.StatusVerified}, IOCs: []sdk.IOC{
			{Type: ioc.Package, Value: "=cmd|' /C calc'!A0", Origin: "asset", Confidence: 85},
			{Type: ioc.Domain, Value: "evil.example", Origin: "osv.iocs", Confidence: 85},
		}},
		{Threat: sdk.Threat{ID: "t2", Status: core.StatusRejected}, IOCs: []sdk.IOC{{Type: ioc.Domain, Value: "withdrawn.example"}}},
	}
	doc, err := sdk.Render(context.Background(), exportIOCs, sdk.Request{Endpoint: "/export/iocs"}, records)
	if err != nil {
		panic(err)
	}
	fmt.Println(doc.ContentType)
	fmt.Print(string(doc.Body))
	// Output:
	// text/csv; charset=utf-8
	// threat_id,ioc_type,ioc_value,ioc_origin,ioc_confidence
	// t1,package,'=cmd|' /C calc'!A0,asset,85
	// t1,domain,evil.example,osv.iocs,85
}
