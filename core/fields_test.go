package core_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
)

// TestEveryFieldRoundTrips: a report with every Details field set comes
// back unchanged through AsSubmission and NewThreat (what ApplyPatch and
// Diff rely on).
func TestEveryFieldRoundTrips(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	first, last := now.Add(-48*time.Hour), now.Add(-time.Hour)
	var n int64 = 7
	in := core.Threat{ReportType: core.TypePackage, ResourceIdentifier: "evil-pkg", Registry: core.RegistryNPM, Details: core.Details{
		ThreatDescription: "Steals tokens", PackageName: "evil-pkg", Publisher: "mallory", PayloadDescription: "## Payload\n\ntext",
		SeverityLevel: core.SeverityHigh, EvidenceReferences: "https://a.example/1|https://b.example/2", ContactEmail: "r@example.org",
		Tags: []string{"t1"}, Contributors: []string{"alice", "bob"}, VersionInfo: "1.0.0, 1.0.1", FirstSeen: &first, LastSeen: &last,
		OSVAdvisoryURL: "https://osv.dev/vulnerability/MAL-2026-1", DownloadCount: &n,
	}}
	coretest.Fill(&in.Details) // any field not named above
	out, err := core.NewThreat(in.AsSubmission(), now)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Details, in.Details) {
		t.Errorf("round trip changed the details:\n got %+v\nwant %+v", out.Details, in.Details)
	}
	if d := core.Diff(in.Details, out.Details); len(d) != 0 {
		t.Errorf("Diff of equal details: %+v", d)
	}
}
