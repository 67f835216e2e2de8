package plugins

import (
	"reflect"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
)

// TestDetailsCrossThePlugin: every field of core.Details survives the
// protocol, set or absent.
func TestDetailsCrossThePlugin(t *testing.T) {
	at := time.Date(2026, 11, 1, 2, 3, 4, 5000, time.UTC)
	var n int64
	full := core.Details{ThreatDescription: "d", PackageName: "p", Publisher: "pub", PayloadDescription: "## x", SeverityLevel: core.SeverityLow,
		EvidenceReferences: "https://e.example/", ContactEmail: "c@example.org", Tags: []string{"a", "b"}, Contributors: []string{"c"},
		VersionInfo: "1.0.0", FirstSeen: &at, LastSeen: &at, OSVAdvisoryURL: "https://osv.dev/vulnerability/MAL-1", DownloadCount: &n}
	coretest.Fill(&full) // any field not named above
	for _, d := range []core.Details{full, {Tags: []string{}, Contributors: []string{}}} {
		in := core.Threat{ID: "id", Details: d}
		if got := threatFromPB(threatToPB(in)); !reflect.DeepEqual(got.Details, d) {
			t.Errorf("details changed crossing the plugin:\n got %+v\nwant %+v", got.Details, d)
		}
	}
}
