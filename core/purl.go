package core

import (
	"net/url"
	"strings"

	"github.com/package-url/packageurl-go"
)

// CheckRequest is one check as a client gives it (a query string or an
// entry of a batch): report_type and resource_identifier (ecosystem and
// version optional), or a purl alone (docs/api/check-malicious.md).
type CheckRequest struct {
	ReportType         string `json:"report_type"`
	ResourceIdentifier string `json:"resource_identifier"`
	Ecosystem          string `json:"ecosystem"`
	Version            string `json:"version"`
	Purl               string `json:"purl"`
}

// Resolve validates the request and returns the check it asks for,
// parsing a purl when given.
func (q CheckRequest) Resolve() (CheckQuery, error) {
	if q.Purl != "" {
		if q.ReportType != "" || q.ResourceIdentifier != "" || q.Ecosystem != "" || q.Version != "" {
			return CheckQuery{}, Invalid("purl", "give either purl alone or report_type and resource_identifier")
		}
		return ParsePurl(q.Purl)
	}
	if q.ReportType == "" {
		return CheckQuery{}, Invalid("report_type", "is required (or give a purl)")
	}
	rt, err := ParseReportType(q.ReportType)
	if err != nil {
		return CheckQuery{}, err
	}
	if strings.TrimSpace(q.ResourceIdentifier) == "" {
		return CheckQuery{}, Invalid("resource_identifier", "is required")
	}
	out := CheckQuery{ReportType: rt, ResourceIdentifier: q.ResourceIdentifier, Version: strings.TrimSpace(q.Version)}
	if q.Ecosystem != "" {
		if out.Ecosystem, err = ParseRegistry("ecosystem", q.Ecosystem); err != nil {
			return CheckQuery{}, err
		}
	}
	return out, nil
}

// purlTypes maps package-URL types to registries (docs/api/check-malicious.md).
var purlTypes = map[string]string{
	"npm": RegistryNPM, "pypi": RegistryPyPI, "gem": RegistryRubyGems, "cargo": RegistryCrates,
	"golang": RegistryGo, "maven": RegistryMaven, "nuget": RegistryNuGet, "composer": RegistryPackagist,
	"githubactions": RegistryGitHubActions, "vscode-extension": RegistryVSCode,
}

// openVSXHost is the repository_url of a vscode-extension purl of Open
// VSX (the type's default repository is the Marketplace).
const openVSXHost = "open-vsx.org"

// PackagePurl is the package URL of a package in its registry, the
// inverse of ParsePurl (maven names are namespace:name, others
// namespace/name); "" for a registry without a purl type.
func PackagePurl(registry, name string) string {
	typ := ""
	for t, r := range purlTypes {
		if r == registry || (t == "vscode-extension" && registry == RegistryOpenVSX) {
			typ = t
		}
	}
	if typ == "" {
		return ""
	}
	if typ == "vscode-extension" {
		return extensionPurl(registry, name, "")
	}
	sep := "/"
	if typ == "maven" {
		sep = ":"
	}
	namespace := ""
	if i := strings.LastIndex(name, sep); i >= 0 {
		namespace, name = name[:i], name[i+1:]
	}
	return packageurl.NewPackageURL(typ, namespace, name, "", nil, "").ToString()
}

// VersionPurl is the package URL of one version of a package
// (pkg:npm/left-pad@1.3.0): PackagePurl's with the version, before any
// qualifier (Open VSX's repository_url); "" for a registry without a
// purl type.
func VersionPurl(registry, name, version string) string {
	base := PackagePurl(registry, name)
	if base == "" || version == "" {
		return base
	}
	if registry == RegistryOpenVSX {
		return extensionPurl(registry, name, version)
	}
	return base + "@" + url.PathEscape(version)
}

// extensionPurl is an editor extension's package URL: the Marketplace's
// is the type's default repository, Open VSX's names its repository_url.
func extensionPurl(registry, name, version string) string {
	pub, ext, ok := strings.Cut(name, ".")
	if !ok {
		return ""
	}
	var q packageurl.Qualifiers
	if registry == RegistryOpenVSX {
		q = packageurl.QualifiersFromMap(map[string]string{"repository_url": "https://" + openVSXHost})
	}
	return packageurl.NewPackageURL("vscode-extension", pub, ext, version, q, "").ToString()
}

// ParsePurl turns a package URL into the check it names: a package in its
// registry (maven names as namespace:name, others namespace/name) with the
// purl's version, or for docker and oci purls a container image reference.
func ParsePurl(s string) (CheckQuery, error) {
	p, err := packageurl.FromString(s)
	if err != nil {
		return CheckQuery{}, Invalid("purl", "is not a valid package URL: %v", err)
	}
	switch p.Type {
	case "docker", "oci":
		ref := p.Name
		if p.Namespace != "" {
			ref = p.Namespace + "/" + p.Name
		}
		if repo := p.Qualifiers.Map()["repository_url"]; repo != "" {
			ref = strings.TrimSuffix(repo, "/") + "/" + p.Name
		}
		if p.Version != "" {
			if strings.Contains(p.Version, ":") {
				ref += "@" + p.Version
			} else {
				ref += ":" + p.Version
			}
		}
		return CheckQuery{ReportType: TypeContainer, ResourceIdentifier: ref}, nil
	}
	reg, ok := purlTypes[p.Type]
	if !ok {
		return CheckQuery{}, Invalid("purl", "package type %q is not supported (npm, pypi, gem, cargo, golang, maven, nuget, composer, githubactions, vscode-extension, docker, oci)", p.Type)
	}
	name := p.Name
	switch {
	case p.Namespace == "":
	case p.Type == "vscode-extension":
		// publisher.name; Open VSX's by its repository_url.
		name = p.Namespace + "." + p.Name
		if u, err := url.Parse(p.Qualifiers.Map()["repository_url"]); err == nil && strings.EqualFold(strings.TrimPrefix(u.Host, "www."), openVSXHost) {
			reg = RegistryOpenVSX
		}
	case p.Type == "maven":
		name = p.Namespace + ":" + p.Name
	default:
		name = p.Namespace + "/" + p.Name
	}
	return CheckQuery{ReportType: TypePackage, ResourceIdentifier: name, Ecosystem: reg, Version: p.Version}, nil
}
