package core

import "strings"

// OSVEcosystems maps registries to the names of OSV's ecosystems, for the
// registries OSV has one for (CONTRACT.md §11). Open VSX and the container
// registries have none: their reports have no OSV record.
var OSVEcosystems = map[string]string{
	RegistryNPM: "npm", RegistryPyPI: "PyPI", RegistryRubyGems: "RubyGems", RegistryCrates: "crates.io",
	RegistryGo: "Go", RegistryMaven: "Maven", RegistryNuGet: "NuGet", RegistryPackagist: "Packagist",
	RegistryVSCode: "VSCode",
}

// RegistryOfOSVEcosystem returns the registry of an OSV ecosystem name
// (case-insensitive) or of a registry name, false when OSV has none.
func RegistryOfOSVEcosystem(name string) (string, bool) {
	for r, e := range OSVEcosystems {
		if strings.EqualFold(name, e) || strings.EqualFold(name, r) {
			return r, true
		}
	}
	return "", false
}

// OSVCommunityPrefix names the OSV records of community reports:
// THREATD-<report id>.
const OSVCommunityPrefix = "THREATD-"

// OwnOSVRecord reports whether an OSV record id names report id: the record
// is this database's own report, exported (an import leaves it alone).
func OwnOSVRecord(recordID, id string) bool {
	return recordID == OSVCommunityPrefix+id
}
