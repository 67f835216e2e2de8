package core

import "strings"

// OSVEcosystems maps registries to the names of OSV's ecosystems, for the
// registries OSV has one for (docs/osv.md). Open VSX and the container
// registries have none: their reports have no OSV record.
var OSVEcosystems = map[string]string{
	RegistryNPM: "npm", RegistryPyPI: "PyPI", RegistryRubyGems: "RubyGems", RegistryCrates: "crates.io",
	RegistryGo: "Go", RegistryMaven: "Maven", RegistryNuGet: "NuGet", RegistryPackagist: "Packagist",
	RegistryVSCode: "VSCode", RegistryGitHubActions: "GitHub Actions",
}

// OSVRegistries are the registries of OSVEcosystems, in PackageRegistries'
// order.
var OSVRegistries = func() []string {
	var out []string
	for _, r := range PackageRegistries {
		if _, ok := OSVEcosystems[r]; ok {
			out = append(out, r)
		}
	}
	return out
}()

// osvRegistries is OSVEcosystems the other way, by lower-case name.
var osvRegistries = func() map[string]string {
	m := make(map[string]string, len(OSVEcosystems))
	for r, e := range OSVEcosystems {
		m[strings.ToLower(e)] = r
	}
	return m
}()

// RegistryOfOSVEcosystem returns the registry of an OSV ecosystem name
// (case-insensitive), false when threatd has none for it.
func RegistryOfOSVEcosystem(name string) (string, bool) {
	r, ok := osvRegistries[strings.ToLower(name)]
	return r, ok
}

// OSVCommunityPrefix names the OSV records of community reports:
// THREATD-<report id>.
const OSVCommunityPrefix = "THREATD-"

// OSVSource is the Source of the reports imported from OSV records.
const OSVSource = "osv"

// HasOSVRecord reports whether a verified report has an OSV record: a
// package report of a registry OSV has an ecosystem for.
func HasOSVRecord(t Threat) bool {
	_, ok := OSVEcosystems[t.Registry]
	return t.ReportType == TypePackage && ok && t.Status == StatusVerified
}

// OSVRecordOf is the id of a report's OSV record: an imported report's
// upstream record id (without the package qualifier a record with several
// packages gives its reports), a community report's THREATD-<uuid>.
func OSVRecordOf(t Threat) string {
	if t.Source == OSVSource && t.UpstreamID != "" {
		id, _, _ := strings.Cut(t.UpstreamID, "/")
		return id
	}
	return OSVCommunityPrefix + t.ID
}

// OwnOSVRecord reports whether an OSV record id names report id: the record
// is this database's own report, exported (an import leaves it alone).
func OwnOSVRecord(recordID, id string) bool {
	return recordID == OSVCommunityPrefix+id
}

// OSVModifiedFormat asks the osv exporter for an ecosystem's
// modified_id.csv instead of its all.zip.
const OSVModifiedFormat = "modified_id"

// OSVEcosystemsText is ecosystems.txt, as OSV's bucket has it: the OSV
// ecosystems threatd writes an all.zip for, one a line.
func OSVEcosystemsText() string {
	var b strings.Builder
	for _, r := range OSVRegistries {
		b.WriteString(OSVEcosystems[r])
		b.WriteByte('\n')
	}
	return b.String()
}
