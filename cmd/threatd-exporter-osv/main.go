// Command threatd-exporter-osv renders verified package reports as OSV
// records (CONTRACT.md §11) in an ecosystem's all.zip: one <id>.json per
// record, the layout OSV publishes and osv-scanner reads offline. It
// streams: each record is written to the archive as it arrives (the
// reports of a record with several packages upstream are held and merged
// at the end), so an archive of every verified report takes bounded
// memory. `threatd export osv DIR` and GET {base}/osv/{ecosystem}/all.zip
// use it.
package main

import (
	"context"
	"iter"

	"github.com/threatd/threatd/osv"
	"github.com/threatd/threatd/plugins/sdk"
)

func main() {
	sdk.ServeStreamingExporter("osv", "OSV records of verified package reports, as an ecosystem's all.zip", export)
}

func export(_ context.Context, _ sdk.Request, records iter.Seq[sdk.Record], out *sdk.Writer) error {
	out.ContentType = "application/zip"
	w := osv.NewArchiveWriter(out)
	for r := range records {
		if osv.Exportable(r.Threat) {
			if err := w.Add(r.Threat); err != nil {
				return err
			}
		}
	}
	_, err := w.Close()
	return err
}
