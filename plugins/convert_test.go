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

// What the community says of a record crosses to an exporter whole.
func TestCommunityCrossesThePlugin(t *testing.T) {
	at := time.Date(2026, 11, 26, 4, 5, 6, 789000000, time.UTC)
	c := core.Community{Confidence: 73, Disputed: true, ChangedAt: at,
		Sightings: core.SightingCounts{ThreatID: "t1", Seen: 5, FalsePositive: 2, Expired: 1, LastSeen: at.Add(-time.Hour), UpdatedAt: at},
		Campaigns: []core.CampaignRef{{ID: "c1", Name: "Shai-Hulud", Description: "npm worm", CreatedAt: at.Add(-time.Hour), UpdatedAt: at}, {ID: "c2", Name: "é", CreatedAt: at, UpdatedAt: at}}}
	got := recordFromPB(recordToPB(core.ExportRecord{Threat: core.Threat{ID: "t1"}, Community: c})).Community
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("\n got %+v\nwant %+v", got, c)
	}
}
