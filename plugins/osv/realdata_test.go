package osv

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/threatd/threatd/core"
)

// fullDir holds the 29,604 real OSV malicious-package reports as OSV
// publishes them (one all.zip per ecosystem), beside the repository.
const fullDir = "../../../shared/reference/osv-malicious-full"

var sourceLine = regexp.MustCompile(`(?mi)^\s*#+\s*Source:[^\n(]*\(\s*([0-9a-f]{64})\s*\)`)

// On every real report, the indicators follow docs/indicators.md: no digest
// of a "## Source:" line (the upstream record's, not a file's) as a file
// hash, no name without a public top-level domain as a domain, no host of an
// infrastructure URL as a domain unless the report names it bare; and every
// URL, domain and IP of database_specific.iocs is published.
func TestRealReportsIndicators(t *testing.T) {
	zips, _ := filepath.Glob(filepath.Join(fullDir, "*", "all.zip"))
	if len(zips) == 0 {
		if _, err := os.Stat(fullDir); err != nil {
			t.Skipf("no real reports at %s", fullDir)
		}
		t.Fatalf("no all.zip under %s", fullDir)
	}
	var records, sourceDigests, falseHashes, hashes, domains, noTLD, infraHosts, listed, missed int
	var refLinks, ownNames, unlabelled, packages, versioned int
	var missedExamples, falseExamples []string
	origins := map[string]int{}
	err := Source{Now: time.Now}.Read(context.Background(), zips, nil, nil, func(it core.SourceItem) error {
		if it.Record == nil {
			return nil
		}
		records++
		th := it.Record.Threat
		digests := map[string]bool{}
		for _, m := range sourceLine.FindAllStringSubmatch(th.Details.PayloadDescription, -1) {
			digests[strings.ToLower(m[1])] = true
		}
		sourceDigests += len(digests)
		published := map[string]bool{}
		evidence := map[string]bool{}
		for _, u := range strings.Split(th.Details.EvidenceReferences+"|"+th.Details.OSVAdvisoryURL, "|") {
			for _, e := range core.ExtractText(u) {
				evidence[e.Type+" "+e.Value] = true
			}
		}
		for _, ioc := range core.ExtractIOCs(th) {
			published[ioc.Type+" "+ioc.Value] = true
			origins[ioc.Origin]++
			if ioc.Origin == "" || ioc.Confidence < 1 || ioc.Confidence > 100 {
				unlabelled++
			}
			// A link the report gives as its reference or evidence is not
			// an indicator unless the upstream record lists it.
			if ioc.Type == core.IOCURL && ioc.Origin == core.OriginPayload && evidence[ioc.Type+" "+ioc.Value] {
				refLinks++
				if len(falseExamples) < 10 {
					falseExamples = append(falseExamples, ioc.Value+" (reference) in "+th.UpstreamID)
				}
			}
			// Nothing the text says of the package's own name, versions or
			// home (registry, code host) is an indicator.
			if ioc.Origin == core.OriginPayload && (strings.Contains(strings.ToLower(th.ResourceIdentifier), strings.ToLower(ioc.Value)) ||
				ioc.Type == core.IOCIP && strings.Contains(","+strings.ReplaceAll(th.Details.VersionInfo, " ", "")+",", ","+ioc.Value+",") ||
				ioc.Type == core.IOCDomain && (ioc.Value == "crates.io" || ioc.Value == "github.com") ||
				ioc.Type == core.IOCURL && strings.Contains(strings.ToLower(ioc.Value), "/"+strings.ToLower(th.ResourceIdentifier[strings.LastIndexByte(th.ResourceIdentifier, '/')+1:]))) {
				ownNames++
				if len(falseExamples) < 10 {
					falseExamples = append(falseExamples, ioc.Value+" (the package's own) in "+th.UpstreamID)
				}
			}
			switch ioc.Type {
			case core.IOCPackage:
				if ioc.Origin == core.OriginAsset {
					packages++
					if len(ioc.Versions) > 0 {
						versioned++
					}
				}
			case core.IOCHash:
				hashes++
				if digests[ioc.Value] {
					falseHashes++
				}
			case core.IOCDomain:
				domains++
				if !hasPublicTLD(ioc.Value) {
					noTLD++
				}
				if core.IsInfrastructure(ioc.Value) && !namesBare(th.Details.PayloadDescription+"\n"+th.Details.ThreatDescription, ioc.Value) {
					infraHosts++
					if len(falseExamples) < 10 {
						falseExamples = append(falseExamples, ioc.Value+" in "+th.UpstreamID)
					}
				}
			}
		}
		// Recall: every URL, domain and IP the record lists in
		// database_specific.iocs (the section the import writes) is published.
		for _, v := range listedIOCs(th.Details.PayloadDescription) {
			listed++
			if !publishedAs(published, v) {
				missed++
				if len(missedExamples) < 10 {
					missedExamples = append(missedExamples, v)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reports from %d archives: %d source digests, %d file-hash indicators, %d of them source digests", records, len(zips), sourceDigests, hashes, falseHashes)
	t.Logf("%d domain indicators: %d without a public TLD, %d hosts of infrastructure URLs; osv.iocs: %d listed URLs, domains and IPs, %d not published %q",
		domains, noTLD, infraHosts, listed, missed, missedExamples)
	if records < 29_000 || sourceDigests == 0 {
		t.Fatalf("read %d reports with %d source digests: the sample is not what this test expects", records, sourceDigests)
	}
	t.Logf("by origin %v; %d package indicators, %d of them with versions; %d reference links and %d of the package's own name, versions or home published; %d indicators without origin or confidence",
		origins, packages, versioned, refLinks, ownNames, unlabelled)
	if falseHashes != 0 || noTLD != 0 || infraHosts != 0 || refLinks != 0 || ownNames != 0 || unlabelled != 0 {
		t.Fatalf("false indicators: %d source digests as file hashes, %d domains without a public TLD, %d infrastructure hosts as domains, %d reference links, %d own names; %d unlabelled %q",
			falseHashes, noTLD, infraHosts, refLinks, ownNames, unlabelled, falseExamples)
	}
	if origins[core.OriginAsset] < records || origins[core.OriginOSV] == 0 || packages == 0 {
		t.Fatalf("origins %v for %d reports: every report's asset and the listed indicators must be labelled", origins, records)
	}
	if listed == 0 || missed != 0 {
		t.Fatalf("%d of %d indicators listed in osv.iocs not published: %q", missed, listed, missedExamples)
	}
}

// hasPublicTLD mirrors core's rule from outside: the last label is an ICANN
// top-level domain (checked here against golang.org/x/net/publicsuffix, the
// library core cannot import).
func hasPublicTLD(host string) bool {
	_, icann := publicsuffix.PublicSuffix(host[strings.LastIndexByte(host, '.')+1:])
	return icann
}

// namesBare reports whether text names host as a bare domain (outside a URL).
func namesBare(text, host string) bool {
	re := regexp.MustCompile(`(?i)(^|[^/.\w-])` + regexp.QuoteMeta(host) + `($|[^\w.-]|\.\s)`)
	return re.MatchString(core.Refang(text))
}

// listedIOCs returns the URLs, domains and IPs of the indicators section
// the OSV import writes from database_specific.iocs.
func listedIOCs(payload string) []string {
	_, section, ok := strings.Cut(payload, core.IOCSection)
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(section, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(core.Refang(v))
		if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") || ipOrDomain.MatchString(v) {
			out = append(out, v)
		}
	}
	return out
}

var ipOrDomain = regexp.MustCompile(`^(?:\d{1,3}(?:\.\d{1,3}){3}|(?:[a-zA-Z0-9-]+\.)+[a-zA-Z]{2,63})$`)

// publishedAs reports whether the listed value v is among the published
// indicators, in its canonical form.
func publishedAs(published map[string]bool, v string) bool {
	for _, ioc := range core.ExtractText(v) {
		if published[ioc.Type+" "+ioc.Value] {
			return true
		}
	}
	return false
}
