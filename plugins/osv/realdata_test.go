package osv

import (
	"cmp"
	"context"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/blocklist"
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

// On every real report, what the block lists take (core/blocklist): no
// shared infrastructure, no package's own name, nothing a resolver cannot
// hold, no local address; and the lists are not empty.
func TestRealReportsBlockLists(t *testing.T) {
	zips := coretest.OSVArchives(t)
	domains, ips := map[string]int{}, map[string]int{}
	reports, listing := 0, 0
	var wrong []string
	err := Source{Now: time.Now}.Read(context.Background(), zips, nil, nil, func(it core.SourceItem) error {
		if it.Record == nil {
			return nil
		}
		th := core.Derive(it.Record.Threat)
		reports++
		h := blocklist.Of(th)
		if !h.Empty() {
			listing++
		}
		for _, d := range h.Domains {
			domains[d]++
			if ioc.IsInfrastructure(d) || !blocklist.IsName(d) || strings.EqualFold(d, th.ResourceIdentifier) || strings.EqualFold(d, th.Details.PackageName) {
				wrong = append(wrong, th.UpstreamID+": "+d)
			}
		}
		for _, a := range h.IPs {
			ips[a]++
			if addr := netip.MustParseAddr(a); addr.IsPrivate() || addr.IsLoopback() || addr.IsUnspecified() {
				wrong = append(wrong, th.UpstreamID+": "+a)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	top := slices.SortedFunc(maps.Keys(domains), func(a, b string) int { return cmp.Or(domains[b]-domains[a], strings.Compare(a, b)) })
	t.Logf("%d reports, %d put something on the lists: %d domains, %d addresses; most named: %v", reports, listing, len(domains), len(ips), top[:min(15, len(top))])
	if reports < 29_000 || len(domains) == 0 || len(ips) == 0 {
		t.Fatalf("%d reports, %d domains, %d addresses: the sample is not what this test expects", reports, len(domains), len(ips))
	}
	if len(wrong) > 0 {
		t.Fatalf("%d wrong entries: %q", len(wrong), wrong[:min(20, len(wrong))])
	}
}
