// Package ioctest audits published indicators against the rules of
// docs/indicators.md, from outside core's extraction code: it counts what
// is false (digests of "## Source:" lines as file hashes, names without a
// public top-level domain as domains, hosts of infrastructure URLs as bare
// domains, reference links, the package's own name, versions or home) and
// what is missed (indicators the upstream record lists). The OSV plugin's
// test runs it on the 29,604 real reports read by the source; the daemon's
// end-to-end test on the same reports imported and read back over HTTPS.
package ioctest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// Report is what the audit needs of a report: its subject and texts, as
// stored.
type Report struct {
	ID, UpstreamID     string
	ResourceIdentifier string
	VersionInfo        string
	PayloadDescription string
	ThreatDescription  string
	EvidenceReferences string
	OSVAdvisoryURL     string
}

// Counts are the audit's findings.
type Counts struct {
	Reports, SourceDigests, Hashes, FalseHashes                int
	Domains, NoTLD, InfraHosts, RefLinks, OwnNames, Unlabelled int
	Listed, Missed, Packages, Versioned                        int
	Origins                                                    map[string]int
	FalseExamples, MissedExamples                              []string
}

var sourceLine = regexp.MustCompile(`(?mi)^\s*#+\s*Source:[^\n(]*\(\s*([0-9a-f]{64})\s*\)`)

// Add audits one report's published indicators.
func (c *Counts) Add(r Report, iocs []ioc.IOC) {
	if c.Origins == nil {
		c.Origins = map[string]int{}
	}
	c.Reports++
	digests := map[string]bool{}
	for _, m := range sourceLine.FindAllStringSubmatch(r.PayloadDescription, -1) {
		digests[strings.ToLower(m[1])] = true
	}
	c.SourceDigests += len(digests)
	evidence := map[string]bool{}
	for _, u := range strings.Split(r.EvidenceReferences+"|"+r.OSVAdvisoryURL, "|") {
		for _, e := range core.ExtractText(u) {
			evidence[e.Type+" "+e.Value] = true
		}
	}
	falseOne := func(why, value string) {
		if len(c.FalseExamples) < 10 {
			c.FalseExamples = append(c.FalseExamples, fmt.Sprintf("%s (%s) in %s", value, why, r.UpstreamID))
		}
	}
	name := strings.ToLower(r.ResourceIdentifier)
	base := name[strings.LastIndexByte(name, '/')+1:]
	versions := "," + strings.ReplaceAll(r.VersionInfo, " ", "") + ","
	published := map[string]bool{}
	for _, ind := range iocs {
		published[ind.Type+" "+ind.Value] = true
		c.Origins[ind.Origin]++
		if ind.Origin == "" || ind.Confidence < 1 || ind.Confidence > 100 {
			c.Unlabelled++
		}
		if ind.Type == ioc.URL && ind.Origin == ioc.OriginPayload && evidence[ind.Type+" "+ind.Value] {
			c.RefLinks++
			falseOne("reference", ind.Value)
		}
		if ind.Origin == ioc.OriginPayload && (strings.Contains(name, strings.ToLower(ind.Value)) ||
			ind.Type == ioc.IP && strings.Contains(versions, ","+ind.Value+",") ||
			ind.Type == ioc.Domain && (ind.Value == "crates.io" || ind.Value == "github.com") ||
			ind.Type == ioc.URL && strings.Contains(strings.ToLower(ind.Value), "/"+base)) {
			c.OwnNames++
			falseOne("the package's own", ind.Value)
		}
		switch ind.Type {
		case ioc.Package:
			if ind.Origin == ioc.OriginAsset {
				c.Packages++
				if len(ind.Versions) > 0 {
					c.Versioned++
				}
			}
		case ioc.Hash:
			c.Hashes++
			if digests[ind.Value] {
				c.FalseHashes++
				falseOne("source digest", ind.Value)
			}
		case ioc.Domain:
			c.Domains++
			if !hasPublicTLD(ind.Value) {
				c.NoTLD++
				falseOne("no public TLD", ind.Value)
			}
			if ioc.IsInfrastructure(ind.Value) && !namesBare(r.PayloadDescription+"\n"+r.ThreatDescription, ind.Value) {
				c.InfraHosts++
				falseOne("infrastructure host", ind.Value)
			}
		}
	}
	// Recall: every URL, domain and IP the record lists in
	// database_specific.iocs (the section the import writes) is published.
	for _, v := range listedIOCs(r.PayloadDescription) {
		c.Listed++
		if !publishedAs(published, v) {
			c.Missed++
			if len(c.MissedExamples) < 10 {
				c.MissedExamples = append(c.MissedExamples, v+" in "+r.UpstreamID)
			}
		}
	}
}

// False is the number of false indicators of every kind.
func (c *Counts) False() int {
	return c.FalseHashes + c.NoTLD + c.InfraHosts + c.RefLinks + c.OwnNames + c.Unlabelled
}

// String is the audit as a report for a test log and the documentation.
func (c *Counts) String() string {
	var origins []string
	for o, n := range c.Origins {
		origins = append(origins, fmt.Sprintf("%s %d", o, n))
	}
	sort.Strings(origins)
	return fmt.Sprintf("%d reports: %d source digests, %d file-hash indicators (%d of them source digests); %d domain indicators (%d without a public TLD, "+
		"%d infrastructure hosts not named bare); %d reference links and %d of the package's own name, versions or home published; "+
		"%d without origin or confidence; osv.iocs listed %d URLs, domains and IPs, %d missed %q; by origin: %s; %d package indicators, %d with versions; false: %q",
		c.Reports, c.SourceDigests, c.Hashes, c.FalseHashes, c.Domains, c.NoTLD, c.InfraHosts, c.RefLinks, c.OwnNames, c.Unlabelled,
		c.Listed, c.Missed, c.MissedExamples, strings.Join(origins, ", "), c.Packages, c.Versioned, c.FalseExamples)
}

// hasPublicTLD mirrors core's rule from outside: the last label is an ICANN
// top-level domain (checked against golang.org/x/net/publicsuffix, which
// core cannot import).
func hasPublicTLD(host string) bool {
	_, icann := publicsuffix.PublicSuffix(host[strings.LastIndexByte(host, '.')+1:])
	return icann
}

// namesBare reports whether text names host as a bare domain (outside a URL).
func namesBare(text, host string) bool {
	re := regexp.MustCompile(`(?i)(^|[^/.\w-])` + regexp.QuoteMeta(host) + `($|[^\w.-]|\.\s)`)
	return re.MatchString(ioc.Refang(text))
}

// listedIOCs returns the URLs, domains and IPs of the indicators section
// the OSV import writes from database_specific.iocs.
func listedIOCs(payload string) []string {
	_, section, ok := strings.Cut(payload, ioc.Section)
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(section, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(ioc.Refang(v))
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
	for _, ind := range core.ExtractText(v) {
		if published[ind.Type+" "+ind.Value] {
			return true
		}
	}
	return false
}
