package osv

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
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
// it runs on every report submitted or imported, and on every revision
// (core.Derive); the renderings read the indicators stored.
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
	set := blocklist.NewSet()
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
		set.Put(th.UpstreamID, 1, h)
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
	// The same entries as Suricata rules, read by suricata-update's rule
	// parser (Suricata itself is not installable here): every rule comes
	// through, one per address, three per domain.
	listed, _ := set.Listing()
	rules := make([]blocklist.Rule, len(listed))
	for i, l := range listed {
		rules[i] = blocklist.Rule{Listed: l, Number: int64(i + 1), Rev: 1}
	}
	var b strings.Builder
	if err := blocklist.RenderSuricata(&b, rules, blocklist.DefaultSIDBase); err != nil {
		t.Fatal(err)
	}
	want := 3*len(domains) + len(ips)
	if n := strings.Count(b.String(), "\nalert "); n != want {
		t.Fatalf("%d rules rendered for %d domains and %d addresses", n, len(domains), len(ips))
	}
	tool, err := exec.LookPath("suricata-update")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("suricata-update is not installed (CI requires it: Debian suricata-update)")
		}
		t.Skip("suricata-update is not installed (Debian suricata-update): the Suricata rules were not parsed")
	}
	dir := t.TempDir()
	for name, text := range map[string]string{"threatd.rules": b.String(), "none.rules": "", "update.yaml": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(tool, "--no-test", "--no-reload", "--suricata-version", "7.0.3", "-D", filepath.Join(dir, "data"),
		"-c", filepath.Join(dir, "update.yaml"), "--suricata-conf", "/dev/null", "--url", "file://"+filepath.Join(dir, "none.rules"),
		"--local", filepath.Join(dir, "threatd.rules"), "-o", filepath.Join(dir, "out"), "--fail").CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("total: %d; enabled: %d", want, want)) {
		t.Fatalf("suricata-update did not take the %d rules: %v\n%s", want, err, out)
	}
	t.Logf("%d Suricata rules, every one read by suricata-update", want)
}

// BenchmarkReadArchives measures reading the real archives, each
// iteration every record: in full (an import), and as a re-import, where
// every record is known and only its head is read.
func BenchmarkReadArchives(b *testing.B) {
	zips := coretest.OSVArchives(b)
	for _, mode := range []string{"full", "known"} {
		b.Run(mode, func(b *testing.B) {
			var known core.Known
			if mode == "known" {
				known = func(_ context.Context, recs []core.UpstreamVersion) ([]bool, error) {
					out := make([]bool, len(recs))
					for i := range out {
						out[i] = true
					}
					return out, nil
				}
			}
			records := 0
			for b.Loop() {
				records = 0
				err := Source{Now: time.Now}.Read(context.Background(), zips, nil, known, func(it core.SourceItem) error {
					records++
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			if records < 29_000 {
				b.Fatalf("%d records", records)
			}
			b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
