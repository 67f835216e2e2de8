package record_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/record"
)

// Splice writes what json.Marshal writes for the whole record, for
// community signals of every shape (HTML-escaped names, nanoseconds, none).
func TestSpliceIsMarshal(t *testing.T) {
	at := time.Date(2026, 11, 26, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	th := core.Threat{ID: "6c3c2a38-9d9f-4d3e-9a57-0b8f8f1c5a11", Status: core.StatusVerified, ReportType: core.TypePackage,
		ResourceIdentifier: "left-pad<script>", Registry: "npm", CreatedAt: at, Details: core.Details{ThreatDescription: "a & b", Tags: []string{"worm"}}}
	cases := []core.Community{
		{},
		{Confidence: 50},
		{Sightings: core.SightingCounts{Seen: 12, FalsePositive: 3, Expired: 1, LastSeen: at}, Confidence: 61, Disputed: true,
			Campaigns: []core.CampaignRef{{ID: "c1", Name: "Shai-Hulud <&> \u2028 \"worm\""}, {ID: "c2", Name: "é"}}},
	}
	for i, c := range cases {
		want, err := json.Marshal(record.Public(th, c))
		if err != nil {
			t.Fatal(err)
		}
		base, err := record.PublicJSON(th)
		if err != nil {
			t.Fatal(err)
		}
		if got := record.Splice(base, c); string(got) != string(want) {
			t.Errorf("case %d:\nsplice  %s\nmarshal %s", i, got, want)
		}
		var back map[string]any
		if err := json.Unmarshal(record.Splice(base, c), &back); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for _, k := range []string{"sightings", "confidence", "disputed", "campaigns"} {
			if _, ok := back[k]; !ok {
				t.Errorf("case %d: no %q", i, k)
			}
		}
	}
}
