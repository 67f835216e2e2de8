// Command threatd-exporter-misp renders a day's verified (and withdrawn)
// reports as the event of a MISP feed (docs/misp.md): the daemon chooses
// the days, names the events and keeps manifest.json and hashes.csv; this
// plugin writes each event file. GET {base}/misp/{uuid}.json, the
// manifest's and hashes.csv's upkeep and `threatd export misp DIR` use it.
package main

import (
	"context"
	"iter"

	"github.com/threatd/threatd/plugins/misp"
	"github.com/threatd/threatd/plugins/sdk"
)

func main() {
	sdk.ServeStreamingExporter("misp", "A day's reports as the event of a MISP feed", export)
}

func export(_ context.Context, req sdk.Request, records iter.Seq[sdk.Record], out *sdk.Writer) error {
	r, err := misp.RequestOf(req.Query)
	if err != nil {
		return err
	}
	out.ContentType = "application/json"
	return misp.Write(out, r, records)
}
