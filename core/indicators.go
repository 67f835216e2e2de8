package core

import (
	"slices"
	"strings"

	"github.com/threatd/threatd/core/ioc"
)

// ExtractIOCs finds the indicators of a report (docs/indicators.md): its
// own subject (OriginAsset), the indicators an import lists under
// ioc.Section (OriginOSV), then everything re-fanged from
// payload_description and threat_description (OriginPayload), where links
// the report gives as its references or evidence are not indicators.
// Values are normalised as for duplicate keys and listed once each, with
// the origin and confidence of their first, strongest source.
func ExtractIOCs(t Threat) []ioc.IOC {
	seen := map[string]bool{}
	var out []ioc.IOC
	add := func(ind ioc.IOC) {
		k := ind.Type + "\x00" + ind.Value
		if ind.Value == "" || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, ind)
	}
	versions := AffectedVersions(t)
	// The report's own resource.
	if c, err := CanonicalIdentifier(t.ReportType, t.Registry, t.ResourceIdentifier); err == nil {
		asset := ioc.IOC{Origin: ioc.OriginAsset, Confidence: ioc.ConfidenceHigh}
		switch t.ReportType {
		case TypePackage:
			asset.Type, asset.Value, asset.Detail = ioc.Package, t.ResourceIdentifier, t.Registry
			asset.Versions = versions
		case TypeURL:
			asset.Type, asset.Value = ioc.URL, c
		case TypeDomain:
			asset.Type, asset.Value = ioc.Domain, c
		case TypeIP:
			asset.Type, asset.Value, asset.Detail = ioc.IP, c, ioc.IPKind(c)
		case TypeWallet:
			asset.Type, asset.Value = ioc.Wallet, c
		case TypeRepository:
			asset.Type, asset.Value, asset.Detail = ioc.URL, "https://"+c, "repository"
		case TypeContainer:
			asset.Type, asset.Value, asset.Detail = ioc.Package, c, "container"
		}
		add(asset)
	}
	text := t.Details.PayloadDescription
	if t.Source != "" {
		if before, listed, ok := strings.Cut(text, ioc.Section); ok {
			text = before
			for _, ind := range extractor.Text(listed, nil) {
				ind.Origin = ioc.OriginOSV
				if ind.Confidence != ioc.ConfidenceLow {
					ind.Confidence = ioc.ConfidenceHigh
				}
				add(ind)
			}
		}
	}
	refs := references(t)
	own := ownHosts(t)
	var names []string
	if t.ReportType == TypePackage {
		// The package's own name is not a host, a hash or an address
		// (vtex.google-tag-manager, byte-flux-3822a6dd…), wherever the text
		// names it outside a link.
		names = []string{t.ResourceIdentifier, t.Details.PackageName}
	}
	skip := func(u string) bool { return refs[u] || ioc.IsReferenceURL(u) || ownLink(t, own, u) }
	for _, ind := range extractor.Text(text+"\n"+t.Details.ThreatDescription, skip, names...) {
		switch {
		case ind.Type == ioc.Domain && own[ind.Value]:
			continue // the package's own registry or code host ("the crates.io team")
		case ind.Type == ioc.IP && slices.Contains(versions, ind.Value):
			continue // "'discord-react' @ 0.0.0.1": a version, not an address
		}
		ind.Origin = ioc.OriginPayload
		add(ind)
	}
	return out
}

// codeHosts are where a package's own source lives.
var codeHosts = map[string]bool{"github.com": true, "gitlab.com": true, "bitbucket.org": true, "codeberg.org": true}

// ownLink reports whether the canonical URL u is the package's own page: on
// its registry, or its repository on a code host (github.com/<owner>/<the
// package's name>/…), which the report links to as the legitimate source.
func ownLink(t Threat, own map[string]bool, u string) bool {
	if t.ReportType != TypePackage {
		return false
	}
	host, path := ioc.HostPath(u)
	if own[host] {
		return true
	}
	if !codeHosts[host] {
		return false
	}
	parts := strings.Split(path, "/")
	name := strings.ToLower(t.ResourceIdentifier)
	name = name[strings.LastIndexByte(name, '/')+1:]
	if i := strings.LastIndexByte(name, ':'); i >= 0 { // maven group:artifact
		name = name[i+1:]
	}
	return len(parts) >= 2 && name != "" && strings.EqualFold(strings.TrimSuffix(parts[1], ".git"), name)
}

// registryHosts are the hosts of each registry (the registries docs/api/submit.md names): a
// package report naming its own registry is not naming an indicator.
var registryHosts = map[string][]string{
	"npm": {"npmjs.com", "www.npmjs.com", "npmjs.org", "registry.npmjs.org"}, "pypi": {"pypi.org", "files.pythonhosted.org", "pythonhosted.org"},
	"rubygems": {"rubygems.org"}, "crates.io": {"crates.io", "static.crates.io"}, "go": {"pkg.go.dev", "proxy.golang.org", "go.dev"},
	"maven": {"repo.maven.apache.org", "maven.org", "search.maven.org", "central.sonatype.com"}, "nuget": {"nuget.org", "www.nuget.org", "api.nuget.org"},
	"packagist": {"packagist.org", "repo.packagist.org"}, "vscode": {"marketplace.visualstudio.com"}, "openvsx": {"open-vsx.org"},
	"dockerhub": {"hub.docker.com", "docker.io", "registry-1.docker.io"}, "ghcr": {"ghcr.io"}, "quay": {"quay.io"},
}

// ownHosts are the hosts a report names as its package's home, not as
// indicators: the registry's hosts and, for Go modules and repositories,
// the code host of the path.
func ownHosts(t Threat) map[string]bool {
	own := map[string]bool{}
	for _, h := range registryHosts[t.Registry] {
		own[h] = true
	}
	if t.ReportType == TypePackage && t.Registry == "go" || t.ReportType == TypeRepository {
		id := strings.ToLower(t.ResourceIdentifier)
		if host, _ := ioc.HostPath(id); host != "" {
			own[host] = true
		} else {
			host, _, _ := strings.Cut(id, "/")
			own[host] = true
		}
	}
	return own
}

// AffectedVersions lists the versions a package report names in
// version_info; nil when every version is affected (an empty list, or an
// imported record that affects all versions).
func AffectedVersions(t Threat) []string {
	if t.AllVersions || strings.TrimSpace(t.Details.VersionInfo) == "" {
		return nil
	}
	var out []string
	for v := range strings.SplitSeq(t.Details.VersionInfo, ",") {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// references returns a report's own links (evidence_references and the
// advisory URL) in canonical form: a link the report gives as its source is
// not an indicator, even where its text repeats it.
func references(t Threat) map[string]bool {
	refs := map[string]bool{}
	for u := range strings.SplitSeq(t.Details.EvidenceReferences+"|"+t.Details.OSVAdvisoryURL, "|") {
		if c, err := canonicalHTTPURL("", strings.TrimSpace(u)); err == nil {
			refs[c] = true
		}
	}
	return refs
}

// extractor is the indicator scanner with the canonical forms of the
// duplicate keys: what it finds is normalised as a report's identifier is.
var extractor = ioc.Extractor{
	CanonicalURL:  func(s string) (string, error) { return canonicalHTTPURL("", s) },
	CanonicalHost: func(s string) (string, error) { return canonicalHost("", s) },
}

// ExtractText finds indicators in free text after re-fanging it, with the
// confidence of a report's text (ioc.ConfidenceMedium; ioc.ConfidenceLow for
// a domain of shared infrastructure named bare).
func ExtractText(text string) []ioc.IOC { return extractor.Text(text, nil) }
