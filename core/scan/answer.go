package scan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/owenrumney/go-sarif/v2/sarif"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/record"
)

// Answer is a scan's JSON answer (docs/ci.md): the number of packages
// checked, one entry per malicious package of each file, their count, and
// what was read and what was not checked.
type Answer struct {
	Packages  int           `json:"packages"`
	Malicious []Malicious   `json:"malicious"`
	Count     int           `json:"count"`
	Files     []FileSummary `json:"files"`
	Skipped   []FileSkipped `json:"skipped"`
}

// Malicious is a malicious package of a scanned file.
type Malicious struct {
	Purl      string `json:"purl"`
	Name      string `json:"name"`
	Version   string `json:"version"`
	Ecosystem string `json:"ecosystem"`
	File      string `json:"file"`
	// Line is where the file names the package; null where the format has
	// no line for it.
	Line *int `json:"line"`
	// ThreatIDs are the reports that name it, most recently verified first.
	ThreatIDs []string `json:"threat_ids"`
	// URL is the public page of the most recent of them.
	URL string `json:"url"`
	// Details is that report, as check-malicious shows it.
	Details any `json:"details"`

	// description and severity are the report's, for SARIF's rules (an
	// answer read back from JSON has them in Details only).
	description, severity string
}

// Answer renders r for viewer: each report as check-malicious shows it
// (core/record); site is the web site's address (https://host:port) for
// report pages.
func (r Result) Answer(viewer core.Principal, site string, community core.Communities) Answer {
	out := Answer{Packages: r.Packages, Malicious: []Malicious{}, Files: r.Files, Skipped: r.Skipped}
	if out.Files == nil {
		out.Files = []FileSummary{}
	}
	if out.Skipped == nil {
		out.Skipped = []FileSkipped{}
	}
	for _, f := range r.Findings {
		m := Malicious{Purl: f.PackageURL(), Name: f.Name, Version: f.Version, Ecosystem: f.Registry, File: f.File,
			URL: strings.TrimSuffix(site, "/") + "/threats/" + f.Threats[0].ID, Details: record.Of(f.Threats[0], viewer, core.CommunityOf(community, f.Threats[0])),
			description: f.Threats[0].Details.ThreatDescription, severity: string(f.Threats[0].Details.SeverityLevel)}
		if f.Line > 0 {
			line := f.Line
			m.Line = &line
		}
		if m.Ecosystem == "" {
			m.Ecosystem = f.Threats[0].Registry
		}
		for _, t := range f.Threats {
			m.ThreatIDs = append(m.ThreatIDs, t.ID)
		}
		out.Malicious = append(out.Malicious, m)
	}
	out.Count = len(out.Malicious)
	return out
}

// detail reads a text field of an entry's report: from the report the
// answer was made of, or from Details read back from JSON.
func (m Malicious) detail(field string) string {
	switch {
	case field == "description" && m.description != "":
		return m.description
	case field == "severity_level" && m.severity != "":
		return m.severity
	}
	if d, ok := m.Details.(map[string]any); ok {
		if s, ok := d[field].(string); ok {
			return s
		}
	}
	return ""
}

// what names the package: "npm evil@1.0.1".
func (m Malicious) what() string {
	s := m.Name
	if m.Version != "" {
		s += "@" + m.Version
	}
	if m.Ecosystem != "" {
		s = m.Ecosystem + " " + s
	}
	return s
}

// where is "file:line" or "file".
func (m Malicious) where() string {
	if m.Line != nil {
		return fmt.Sprintf("%s:%d", m.File, *m.Line)
	}
	return m.File
}

// WriteText writes a for people: one line per malicious package (where,
// what, the threat ids, the report's page), one per entry not checked,
// then a summary line.
func (a Answer) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, m := range a.Malicious {
		fmt.Fprintf(&b, "%s: %s is malicious (threat %s): %s\n", printable(m.where()), printable(m.what()),
			printable(strings.Join(m.ThreatIDs, ", ")), printable(m.URL))
	}
	for _, s := range a.Skipped {
		where := s.File
		if s.Line > 0 {
			where = fmt.Sprintf("%s:%d", s.File, s.Line)
		}
		fmt.Fprintf(&b, "%s: not checked: %s: %s\n", printable(where), printable(s.Name), printable(s.Reason))
	}
	files := "files"
	if len(a.Files) == 1 {
		files = "file"
	}
	fmt.Fprintf(&b, "%d packages checked in %d %s: %d malicious", a.Packages, len(a.Files), files, a.Count)
	if len(a.Skipped) > 0 {
		fmt.Fprintf(&b, ", %d entries not checked", len(a.Skipped))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// securitySeverity maps a report's severity to GitHub's security-severity
// score (critical ≥ 9.0, high ≥ 7.0, medium ≥ 4.0, low below).
var securitySeverity = map[string]string{"critical": "9.8", "high": "8.0", "medium": "5.5", "low": "3.0"}

// FingerprintKey names scan's partial fingerprint in SARIF results.
const FingerprintKey = "threatdMaliciousPackage/v1"

// SARIF renders a as a SARIF 2.1.0 log for code scanning (GitHub's among
// them): one rule per threat id, one result per malicious package and
// report, located at the package's line in the scanned file, with a
// partial fingerprint that stays the same while the file changes around
// the package (file, package URL and threat id). toolVersion is threatd's
// version; site is the web site's address, the rules' information URI.
func (a Answer) SARIF(toolVersion, site string) (*sarif.Report, error) {
	report, err := sarif.New(sarif.Version210, true)
	if err != nil {
		return nil, err
	}
	run := sarif.NewRunWithInformationURI("threatd", strings.TrimSuffix(site, "/")+"/")
	run.Tool.Driver.WithVersion(toolVersion)
	if sv := semantic(toolVersion); sv != "" {
		run.Tool.Driver.WithSemanticVersion(sv)
	}
	rules := map[string]bool{}
	for _, m := range a.Malicious {
		for i, id := range m.ThreatIDs {
			page := m.URL
			if i > 0 {
				page = strings.TrimSuffix(m.URL, m.ThreatIDs[0]) + id
			}
			if !rules[id] {
				rules[id] = true
				desc := m.detail("description")
				if i > 0 || desc == "" {
					desc = fmt.Sprintf("A verified threatd report names %s as malicious.", m.what())
				}
				level := strings.ToLower(m.detail("severity_level"))
				if i > 0 || securitySeverity[level] == "" {
					level = "critical"
				}
				short := fmt.Sprintf("Malicious package: %s %s", m.Ecosystem, m.Name)
				run.AddRule(id).
					WithName("MaliciousPackage").
					WithShortDescription(sarif.NewMultiformatMessageString(short)).
					WithFullDescription(sarif.NewMultiformatMessageString(clipText(desc, 1000))).
					WithHelpURI(page).
					WithHelp(sarif.NewMultiformatMessageString(
						fmt.Sprintf("%s\n\nRemove or replace the package. The report: %s", clipText(desc, 4000), page)).
						WithMarkdown(fmt.Sprintf("%s\n\nRemove or replace the package. [The threatd report](%s).", markdownText(clipText(desc, 4000)), page))).
					WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel("error")).
					WithProperties(sarif.Properties{
						"tags":              []string{"security", "malicious-package", "supply-chain", "external/cwe/cwe-506"},
						"precision":         "very-high",
						"problem.severity":  "error",
						"security-severity": securitySeverity[level],
					})
			}
			loc := sarif.NewPhysicalLocation().WithArtifactLocation(sarif.NewSimpleArtifactLocation(m.File))
			if m.Line != nil {
				loc.WithRegion(sarif.NewSimpleRegion(*m.Line, *m.Line))
			}
			sum := sha256.Sum256([]byte(m.File + "\x00" + m.Purl + "\x00" + m.Name + "\x00" + id))
			run.CreateResultForRule(id).
				WithLevel("error").
				WithMessage(sarif.NewTextMessage(fmt.Sprintf("%s is malicious: %s", m.what(), page))).
				WithLocations([]*sarif.Location{sarif.NewLocationWithPhysicalLocation(loc)}).
				WithPartialFingerPrints(map[string]any{FingerprintKey: hex.EncodeToString(sum[:16])})
		}
	}
	report.AddRun(run)
	return report, nil
}

// semantic is the version when it is a semantic version (v1.2.3), else "".
func semantic(v string) string {
	v = strings.TrimPrefix(v, "v")
	if parts := strings.Split(strings.SplitN(v, "-", 2)[0], "."); len(parts) == 3 {
		return v
	}
	return ""
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// markdownText escapes text for a Markdown help string: the report's
// description is community text, never markup.
func markdownText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_{}[]()<>#+-.!|~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// printable writes control and invisible format characters (escape
// sequences, bidirectional overrides) as <U+XXXX>: names come from the
// scanned file, and a terminal must show them as they are.
func printable(s string) string {
	if strings.IndexFunc(s, hidden) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, "<U+%04X>", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hidden(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }
