package stix

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
	"github.com/threatd/threatd/plugins/osv"
)

// sameAsEncodingJSON fails unless AppendJSON renders o as encoding/json
// renders the same map.
func sameAsEncodingJSON(t *testing.T, o Object) bool {
	t.Helper()
	want, err := json.Marshal(map[string]any(o))
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendJSON(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("AppendJSON:\n%s\nencoding/json:\n%s", got, want)
		return false
	}
	return true
}

func TestAppendJSONIsEncodingJSON(t *testing.T) {
	for _, o := range append(SharedObjects("threatd <&> \u2028 \"x\""), RecordObjects(sample(), "threatd")...) {
		sameAsEncodingJSON(t, o)
	}
	hostile := Object{
		"plain": "abc", "html": "<script>alert(1)</script> & more", "quote": `a"b\c`, "control": "a\x00b\tc\nd\x1f",
		"unicode": "héllo 世界 \u2028\u2029 😀", "invalid": "a\xffb\xc3", "amp": "fish & chips", "gt": "a > b", "del": "a\x7fb", "empty": "", "true": true, "false": false,
		"int": 85, "negative": -3, "int64": int64(1) << 40, "float": 0.5, "nil": nil, "strings": []string{"a", "<b>", ""},
		"no strings": []string(nil), "empty strings": []string{}, "maps": []map[string]any{{"z": 1, "a": "x"}, {}},
		"nested":  map[string]any{"b": map[string]any{"d": []any{"x", 1, true, nil}, "c": Object{"k": "v"}}},
		"key <&>": "v", "": "empty key", "time": time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
	}
	sameAsEncodingJSON(t, hostile)
	b, err := json.Marshal([]Object{hostile, nil})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal([]map[string]any{hostile, nil})
	if !bytes.Equal(b, want) {
		t.Errorf("a slice of objects through MarshalJSON:\n%s\nwant\n%s", b, want)
	}
}

// On every real report (the 29,604 OSV malicious-package reports), each
// object renders byte for byte as encoding/json renders it: the TAXII
// collections and the bundles serve these bytes.
func TestAppendJSONOnRealReports(t *testing.T) {
	zips := coretest.OSVArchives(t)
	reports, objects, different := 0, 0, 0
	err := osv.Source{Now: time.Now}.Read(context.Background(), zips, nil, nil, func(it core.SourceItem) error {
		if it.Record == nil {
			return nil
		}
		th := it.Record.Threat
		th.ID, th.Status, th.CreatedAt, th.UpdatedAt = "0198c1a2-3b4c-7d5e-8f60-718293a4b5c6", core.StatusVerified, time.Unix(1.7e9, 0), time.Unix(1.7e9, 0)
		reports++
		for _, o := range RecordObjects(Record{Threat: th, IOCs: core.ExtractIOCs(th)}, "threatd") {
			objects++
			if different < 5 && !sameAsEncodingJSON(t, o) {
				different++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reports, %d objects, %d rendered differently", reports, objects, different)
	if reports < 29_000 || different > 0 {
		t.Fatalf("%d reports read (29,604 expected), %d objects rendered differently", reports, different)
	}
}

// BenchmarkRecordObjects: one report's objects (a malware, its sighting
// and an indicator and relationship for each of its indicators), mapped
// and rendered as the TAXII collections render them.
func BenchmarkRecordObjects(b *testing.B) {
	r := sample()
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = buf[:0]
		for _, o := range RecordObjects(r, "threatd") {
			var err error
			if buf, err = AppendJSON(buf, o); err != nil {
				b.Fatal(err)
			}
		}
	}
}
