package analysis

import (
	"fmt"
	"strings"

	"github.com/threatd/threatd/core"
)

// Source is the source user the reports of suspicious versions are
// attributed to (core.SourceUser).
const Source = "analysis"

// Tag marks the reports analysis files.
const Tag = "automatic-analysis"

// maxReportFindings bounds the findings a report's payload lists.
const maxReportFindings = 50

// Submission is the pending report of a suspicious version: a package
// report of its registry, name and version, described by its strongest
// findings, the findings listed in its payload (Markdown, strongest
// first), its severity the strongest new finding's.
func Submission(k Key, r Result) core.Submission {
	typ, name, reg, version := string(core.TypePackage), k.Name, k.Ecosystem, k.Version
	var strongest []string
	sev := SeverityLow
	for _, f := range r.Findings {
		if !f.New {
			continue
		}
		if f.Severity.Rank() > sev.Rank() {
			sev = f.Severity
		}
		if len(strongest) < 3 && !containsRule(strongest, f.Rule) {
			strongest = append(strongest, f.Rule)
		}
	}
	if sev.Rank() < SeverityLow.Rank() {
		sev = SeverityLow
	}
	desc := fmt.Sprintf("threatd's package analysis found %s %s@%s suspicious (score %.1f): %s, new in this version. "+
		"An automatic report: a reviewer decides; verifying it makes the version malicious, rejecting it releases it.",
		reg, name, version, r.Score, strings.Join(strongest, ", "))
	payload := Markdown(r)
	severity := string(sev)
	return core.Submission{ReportType: &typ, ResourceIdentifier: &name, Registry: &reg, VersionInfo: &version,
		ThreatDescription: &desc, PayloadDescription: &payload, SeverityLevel: &severity, Tags: []string{Tag}}
}

func containsRule(rules []string, r string) bool {
	for _, x := range rules {
		if x == r {
			return true
		}
	}
	return false
}

// Markdown lists the findings for a report's payload: each with its
// severity, rule, place, whether it is new, description and excerpt (in a
// fenced block, shown as text).
func Markdown(r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Findings of threatd's package analysis (%s), strongest first:\n\n", strings.Join(r.Analyzers, ", "))
	for i, f := range r.Findings {
		if i == maxReportFindings {
			fmt.Fprintf(&b, "\n…and %d more findings (GET /analysis?purl= lists them all).\n", len(r.Findings)-i)
			break
		}
		where := f.Where()
		status := "also in the previous version"
		if f.New {
			status = "new in this version"
		}
		fmt.Fprintf(&b, "%d. **%s** `%s` in `%s` (%s): %s\n", i+1, f.Severity, clean(f.Rule), clean(where), status, f.Description)
		if f.Excerpt != "" {
			fmt.Fprintf(&b, "\n   ~~~~text\n   %s\n   ~~~~\n\n", strings.ReplaceAll(f.Excerpt, "~~~~", "~ ~ ~ ~"))
		}
	}
	return b.String()
}

// clean keeps a name fit for an inline code span.
func clean(s string) string { return strings.ReplaceAll(s, "`", "'") }
