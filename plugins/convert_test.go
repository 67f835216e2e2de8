package plugins

import (
	"reflect"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// TestDetailsCrossThePlugin: every field of core.Details survives the
// protocol, set or absent, and each is set in the test report (a new field
// without a value here fails by name).
func TestDetailsCrossThePlugin(t *testing.T) {
	at := time.Date(2026, 11, 1, 2, 3, 4, 5000, time.UTC)
	var n int64
	full := core.Details{ThreatDescription: "d", PackageName: "p", Publisher: "pub", PayloadDescription: "## x", SeverityLevel: core.SeverityLow,
		EvidenceReferences: "https://e.example/", ContactEmail: "c@example.org", Tags: []string{"a", "b"}, Contributors: []string{"c"},
		VersionInfo: "1.0.0", FirstSeen: &at, LastSeen: &at, OSVAdvisoryURL: "https://osv.dev/vulnerability/MAL-1", DownloadCount: &n}
	v := reflect.ValueOf(full)
	for _, f := range core.DetailFields {
		if v.Field(f.Index).IsZero() {
			t.Errorf("the test report has no value for %s", f.Name)
		}
	}
	for _, d := range []core.Details{full, {Tags: []string{}, Contributors: []string{}}} {
		in := core.Threat{ID: "id", Details: d}
		if got := threatFromPB(threatToPB(in)); !reflect.DeepEqual(got.Details, d) {
			t.Errorf("details changed crossing the plugin:\n got %+v\nwant %+v", got.Details, d)
		}
	}
}
