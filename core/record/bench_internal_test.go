package record

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// BenchmarkPublicJSON renders an imported report's public record (the
// index spill's entry) by hand, against json.Marshal of the same Base: the
// reference measured in the same run.
func BenchmarkPublicJSON(b *testing.B) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	th := core.Threat{ID: "6c3c2a38-9d9f-4d3e-9a57-0b8f8f1c5a11", Status: core.StatusVerified, ReportType: core.TypePackage,
		ResourceIdentifier: "bench-npm-0450000", Registry: "npm", CreatedAt: at, VerifiedAt: &at, Revision: 1,
		Details: core.Details{ThreatDescription: "Malicious code in bench-npm-0450000 (npm): it sends the environment to https://c2-0450000.bench-exfil.example/collect when installed.",
			PackageName: "bench-npm-0450000", EvidenceReferences: "https://example.org/advisories/450000", Tags: []string{"malicious-package", "bench"},
			Contributors: []string{}, FirstSeen: &at, OSVAdvisoryURL: "https://osv.dev/vulnerability/MAL-2025-450000"}}
	b.Run("by-hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := PublicJSON(th); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(BaseOf(th, core.Principal{})); err != nil {
				b.Fatal(err)
			}
		}
	})
}
