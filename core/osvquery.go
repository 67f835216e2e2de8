package core

import "strings"

// OSVPackage is the package of an OSV.dev query: a name and an OSV
// ecosystem, or a package URL.
type OSVPackage struct {
	Name      string `json:"name,omitzero"`
	Ecosystem string `json:"ecosystem,omitzero"`
	Purl      string `json:"purl,omitzero"`
}

// OSVQuery is one query of OSV.dev's query API (POST /v1/query): a package
// and an optional version (none: every version). Commit queries name git
// commits, which threatd's reports do not have.
type OSVQuery struct {
	Package   *OSVPackage `json:"package"`
	Version   string      `json:"version,omitzero"`
	Commit    string      `json:"commit,omitzero"`
	PageToken string      `json:"page_token,omitzero"`
}

// Resolve turns an OSV query into a check of package reports; field
// prefixes the field names of its errors (e.g. "queries[3].").
func (q OSVQuery) Resolve(field string) (CheckQuery, error) {
	if q.Commit != "" {
		return CheckQuery{}, Invalid(field+"commit", "is not supported: threatd's reports name packages and versions, not commits")
	}
	if q.Package == nil {
		return CheckQuery{}, Invalid(field+"package", "is required: {\"name\", \"ecosystem\"} or {\"purl\"}")
	}
	p := *q.Package
	if p.Purl != "" {
		if p.Name != "" || p.Ecosystem != "" {
			return CheckQuery{}, Invalid(field+"package", "gives a purl and a name or ecosystem: give one or the other")
		}
		c, err := ParsePurl(p.Purl)
		if err != nil {
			return CheckQuery{}, Invalid(field+"package.purl", "%s", strings.TrimPrefix(err.Error(), "purl: "))
		}
		if c.Version != "" && q.Version != "" {
			return CheckQuery{}, Invalid(field+"version", "is given twice: in the purl and in version")
		}
		if q.Version != "" {
			c.Version = q.Version
		}
		return c, nil
	}
	if strings.TrimSpace(p.Name) == "" {
		return CheckQuery{}, Invalid(field+"package.name", "is required with package.ecosystem (or give package.purl)")
	}
	registry, ok := RegistryOfOSVEcosystem(p.Ecosystem)
	if !ok {
		return CheckQuery{}, Invalid(field+"package.ecosystem", "must be an OSV ecosystem threatd holds (%s) (got %q)", strings.Join(osvEcosystemNames(), ", "), Shorten(p.Ecosystem))
	}
	return CheckQuery{ReportType: TypePackage, ResourceIdentifier: p.Name, Ecosystem: registry, Version: q.Version}, nil
}

// osvEcosystemNames lists the OSV names of the package registries.
func osvEcosystemNames() []string {
	out := make([]string, len(OSVRegistries))
	for i, r := range OSVRegistries {
		out[i] = OSVEcosystems[r]
	}
	return out
}

// OSVRecordID tells the reports an OSV record id names: a community record
// (THREATD-<report id>) or an upstream one (the OSV source's record id).
func OSVRecordID(id string) (threatID, upstreamID string) {
	if rest, ok := strings.CutPrefix(id, OSVCommunityPrefix); ok {
		return rest, ""
	}
	return "", id
}
