package npm

import (
	"bytes"
	"encoding/json"
	"hash/fnv"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// AuditPath is npm audit's bulk-advisory endpoint below the registry root.
func (Adapter) AuditPath() string { return "-/npm/v1/security/advisories/bulk" }

// ParseAudit reads a bulk-advisory request: {"name": ["1.0.0", …], …}.
func (Adapter) ParseAudit(body []byte) (map[string][]string, error) {
	var req map[string][]string
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&req); err != nil {
		return nil, core.Invalid("body", `must be a JSON object of package names to version lists ({"name": ["1.0.0"]}): %v`, err)
	}
	return req, nil
}

// advisory is one entry of npm's bulk-advisory answer.
type advisory struct {
	ID                 uint64         `json:"id"`
	URL                string         `json:"url"`
	Title              string         `json:"title"`
	Severity           string         `json:"severity"`
	VulnerableVersions string         `json:"vulnerable_versions"`
	CWE                []string       `json:"cwe"`
	CVSS               map[string]any `json:"cvss"`
}

// severity maps a report's severity to npm's scale.
func severity(s core.Severity) string {
	switch s {
	case core.SeverityMedium:
		return "moderate"
	case core.SeverityCritical, core.SeverityHigh, core.SeverityLow:
		return string(s)
	}
	return "critical"
}

// RenderAudit writes one advisory per refused version, so that plain `npm
// audit` lists malicious packages: severity from the report, the refusal
// as the title (it names the threat id), the report's page as the URL.
func (Adapter) RenderAudit(found []firewall.AuditFinding, site string) ([]byte, error) {
	out := map[string][]advisory{}
	for _, f := range found {
		b := f.Blocked
		t := b.Threats[0]
		h := fnv.New64a()
		_, _ = h.Write([]byte(t.ID + "@" + b.Version))
		out[f.Name] = append(out[f.Name], advisory{
			ID:                 h.Sum64() >> 12,                     // within JavaScript's safe integers
			URL:                site + "/threats/threat_id_" + t.ID, // npm prints a free-standing UUID as ***
			Title:              b.Message(),
			Severity:           severity(t.Details.SeverityLevel),
			VulnerableVersions: b.Version,
			CWE:                []string{"CWE-506"}, // embedded malicious code
			CVSS:               map[string]any{"score": 0, "vectorString": nil},
		})
	}
	return json.Marshal(out)
}
