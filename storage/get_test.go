package storage

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// decodeJSON answers as encoding/json does: the same value whenever
// encoding/json decodes the text, an error whenever it refuses it.
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{
		`[{"type":"package","value":"left-pad","detail":"npm","origin":"asset","confidence":85}]`,
		`[{"type":"url","value":"https://c2.example.invalid/x","origin":"payload","confidence":50,"versions":["1.0.0"]}]`,
		`[{"TYPE":"domain","value":"a.invalid","origin":"payload","confidence":50}]`,
		`[{"type":"domain","type":"ip","value":"a.invalid"}]`,
		`[{"type":"domain","value":"a.invalid","confidence":50.0}]`,
		`[{"type":"domain","value":"a.invalid","confidence":null,"versions":null}]`,
		`[{"type":"domain","value":"\xff.invalid","unknown":1}]`,
		`[]`, `null`, `[null]`, `{}`, `["a","b"]`, `["a",1]`, `[ "a" ] `, `["\u00e9\ud800"]`, ``, `[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		same := func(name string, got, want any, gotErr, wantErr error) {
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%s of %q: error %v, encoding/json's %v", name, b, gotErr, wantErr)
			}
			if wantErr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s of %q: %#v, encoding/json's %#v", name, b, got, want)
			}
		}
		var iocs []ioc.IOC
		wantErr := json.Unmarshal(b, &iocs)
		got, err := decodeJSON[[]ioc.IOC](b)
		same("indicators", got, iocs, err, wantErr)
		var list []string
		wantErr = json.Unmarshal(b, &list)
		gotList, err := decodeJSON[[]string](b)
		same("list", gotList, list, err, wantErr)
	})
}

// BenchmarkGetThreatsWithIOCs reads 20,000 reports with their details and
// three indicators each (the index spill's fill and the feed read them
// so), 256 at a time, in the order they were written.
func BenchmarkGetThreatsWithIOCs(b *testing.B) {
	s, ctx := migratedSQLite(b)
	recs := planRecords(20000)
	for i := range recs {
		t := &recs[i].Threat
		t.Details.Contributors = []string{}
		t.IOCs = []ioc.IOC{
			{Type: "package", Value: t.ResourceIdentifier, Detail: t.Registry, Origin: ioc.OriginAsset, Confidence: ioc.ConfidenceHigh},
			{Type: "url", Value: fmt.Sprintf("https://c2-%06d.exfil.invalid/collect", i), Origin: ioc.OriginPayload, Confidence: ioc.ConfidenceMedium},
			{Type: "domain", Value: fmt.Sprintf("c2-%06d.exfil.invalid", i), Origin: ioc.OriginPayload, Confidence: ioc.ConfidenceMedium},
		}
	}
	for part := range slices.Chunk(recs, 1000) {
		if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: part, Actor: "test"}); err != nil {
			b.Fatal(err)
		}
	}
	var ids []string
	if err := s.db.NewSelect().Table("threats").Column("id").OrderExpr("rowid").Scan(ctx, &ids); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		from := n % len(ids)
		got, err := s.GetThreatsWithIOCs(ctx, ids[from:min(from+256, len(ids))])
		if err != nil || len(got) == 0 || len(got[0].IOCs) != 3 {
			b.Fatalf("%d reports, %v", len(got), err)
		}
		n += len(got)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/report")
}
