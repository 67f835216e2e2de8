package osv

import (
	"context"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
	"github.com/threatd/threatd/core/ioc"
	"github.com/threatd/threatd/core/ioctest"
)

// On every real report, the indicators follow docs/indicators.md (the
// audit's rules: core/ioctest), and every URL, domain and IP of
// database_specific.iocs is published. cmd/threatd's
// TestRealReportsThroughTheDaemon runs the same audit on the reports
// imported and read back over HTTPS.
func TestRealReportsIndicators(t *testing.T) {
	zips := coretest.OSVArchives(t)
	var c ioctest.Counts
	err := Source{Now: time.Now}.Read(context.Background(), zips, nil, nil, func(it core.SourceItem) error {
		if it.Record == nil {
			return nil
		}
		th := it.Record.Threat
		c.Add(ioctest.Report{UpstreamID: th.UpstreamID, ResourceIdentifier: th.ResourceIdentifier, VersionInfo: th.Details.VersionInfo,
			PayloadDescription: th.Details.PayloadDescription, ThreatDescription: th.Details.ThreatDescription,
			EvidenceReferences: th.Details.EvidenceReferences, OSVAdvisoryURL: th.Details.OSVAdvisoryURL}, core.ExtractIOCs(th))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d archives, %s", len(zips), &c)
	if c.Reports < 29_000 || c.SourceDigests == 0 {
		t.Fatalf("read %d reports with %d source digests: the sample is not what this test expects", c.Reports, c.SourceDigests)
	}
	if c.False() != 0 {
		t.Fatalf("%d false indicators: %s", c.False(), &c)
	}
	if c.Listed == 0 || c.Missed != 0 {
		t.Fatalf("%d of %d indicators listed in osv.iocs not published: %q", c.Missed, c.Listed, c.MissedExamples)
	}
	if c.Origins[ioc.OriginAsset] < c.Reports || c.Origins[ioc.OriginOSV] == 0 || c.Packages == 0 {
		t.Fatalf("origins %v for %d reports: every report's asset and the listed indicators must be labelled", c.Origins, c.Reports)
	}
}

// BenchmarkExtractIOCs measures indicator extraction on the real reports:
// it runs on every published change (storage keeps each report's STIX
// object ids) and on every STIX, OSV and TAXII rendering.
func BenchmarkExtractIOCs(b *testing.B) {
	zips := coretest.OSVArchives(b)
	var threats []core.Threat
	err := Source{Now: time.Now}.Read(context.Background(), zips, nil, nil, func(it core.SourceItem) error {
		if it.Record != nil {
			threats = append(threats, it.Record.Threat)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		core.ExtractIOCs(threats[i%len(threats)])
		i++
	}
}
