// Command threatd-exporter-osv renders verified package reports as OSV
// records (docs/osv.md) in an ecosystem's all.zip: one <id>.json per
// record, the layout OSV publishes and osv-scanner reads offline. It
// streams: each record is written to the archive as it arrives (the
// reports of a record with several packages upstream are sorted on disk
// and merged at the end), and the archive's directory and the names
// checked for duplicates are kept in temporary files, so an archive of
// every verified report takes bounded memory. `threatd export osv DIR` and GET {base}/osv/{ecosystem}/all.zip
// use it.
package main

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/plugins/osv"
	"github.com/threatd/threatd/plugins/sdk"
)

func main() {
	sdk.ServeStreamingExporter("osv", "OSV records of verified package reports, as an ecosystem's all.zip", export)
}

func export(_ context.Context, req sdk.Request, records iter.Seq[sdk.Record], out *sdk.Writer) error {
	switch req.Query["format"] {
	case core.OSVRecordsFormat:
		return vulns(records, out)
	case core.OSVModifiedFormat:
		out.ContentType = "text/csv; charset=utf-8"
		var m osv.ModifiedIndex
		defer m.Discard()
		for r := range records {
			m.Add(r.Threat)
		}
		_, err := m.WriteTo(out)
		return err
	}
	out.ContentType = "application/zip"
	w := osv.NewArchiveWriter(out)
	defer w.Discard()
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

// vulns answers core.OSVRecordsFormat: {"vulns": [...]}, the records of
// the reports (those of one upstream record joined), in the order of their
// first report; the daemon's OSV query API serves them.
func vulns(records iter.Seq[sdk.Record], out *sdk.Writer) error {
	out.ContentType = "application/json"
	var list []osv.Vuln
	at := map[string]int{}
	for r := range records {
		if !osv.Exportable(r.Threat) {
			continue
		}
		v := osv.Convert(r.Threat)
		if i, ok := at[v.ID]; ok {
			osv.Merge(&list[i], v)
			continue
		}
		at[v.ID] = len(list)
		list = append(list, v)
	}
	if list == nil {
		list = []osv.Vuln{}
	}
	return json.NewEncoder(out).Encode(map[string]any{"vulns": list})
}
