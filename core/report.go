package core

import (
	"slices"
	"strings"
	"time"

	"github.com/threatd/threatd/core/ioc"
)

// ReportType is the kind of asset a threat report is about (spec §2.1).
type ReportType string

// The report types of spec §2.1.
const (
	TypePackage    ReportType = "package"
	TypeRepository ReportType = "repository"
	TypeURL        ReportType = "url"
	TypeDomain     ReportType = "domain"
	TypeIP         ReportType = "ip"
	TypeWallet     ReportType = "wallet"
	TypeContainer  ReportType = "container"
)

// ReportTypes lists every report type in the order of the specification.
var ReportTypes = []ReportType{TypePackage, TypeRepository, TypeURL, TypeDomain, TypeIP, TypeWallet, TypeContainer}

// ParseReportType validates a report type (exact, lower-case).
func ParseReportType(s string) (ReportType, error) {
	for _, t := range ReportTypes {
		if string(t) == s {
			return t, nil
		}
	}
	return "", Invalid("report_type", "must be one of package, repository, url, domain, ip, wallet, container (got %q)", s)
}

// Severity is a report's severity level.
type Severity string

// The severity levels of spec §2.1.
const (
	SeverityCritical Severity = "critical"
	SeverityHigh     Severity = "high"
	SeverityMedium   Severity = "medium"
	SeverityLow      Severity = "low"
)

// ParseSeverity validates a severity level (case-insensitive; stored lower-case).
func ParseSeverity(s string) (Severity, error) {
	switch v := Severity(strings.ToLower(strings.TrimSpace(s))); v {
	case SeverityCritical, SeverityHigh, SeverityMedium, SeverityLow:
		return v, nil
	}
	return "", Invalid("severity_level", "must be one of critical, high, medium, low (got %q)", s)
}

// Package registries and container registries (docs/api/submit.md, "Fields").
const (
	RegistryNPM       = "npm"
	RegistryPyPI      = "pypi"
	RegistryRubyGems  = "rubygems"
	RegistryCrates    = "crates.io"
	RegistryGo        = "go"
	RegistryMaven     = "maven"
	RegistryNuGet     = "nuget"
	RegistryPackagist = "packagist"
	RegistryVSCode    = "vscode"
	RegistryOpenVSX   = "openvsx"
	// RegistryGitHubActions names actions and reusable workflows by their
	// repository, owner/repo; a version is the ref uses: names.
	RegistryGitHubActions = "github-actions"
	RegistryDockerHub     = "dockerhub"
	RegistryGHCR          = "ghcr"
	RegistryQuay          = "quay"
)

// PackageRegistries are the ecosystems of package reports.
var PackageRegistries = []string{RegistryNPM, RegistryPyPI, RegistryRubyGems, RegistryCrates, RegistryGo,
	RegistryMaven, RegistryNuGet, RegistryPackagist, RegistryVSCode, RegistryOpenVSX, RegistryGitHubActions}

// ContainerRegistries are the ecosystems of container reports.
var ContainerRegistries = []string{RegistryDockerHub, RegistryGHCR, RegistryQuay}

// registryAliases accepts common spellings of registry names.
var registryAliases = map[string]string{
	"crates": "crates.io", "cargo": "crates.io", "golang": "go", "gem": "rubygems", "rubygem": "rubygems",
	"composer": "packagist", "docker": "dockerhub", "docker.io": "dockerhub", "ghcr.io": "ghcr", "quay.io": "quay",
	"open-vsx": "openvsx", "vscode-marketplace": "vscode", "pip": "pypi", "githubactions": "github-actions", "github actions": "github-actions",
}

// ParseRegistry validates an ecosystem name, case-insensitively, and returns
// its canonical spelling.
func ParseRegistry(field, s string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if a, ok := registryAliases[v]; ok {
		v = a
	}
	// Both lists are read where they are: every check-malicious request
	// parses its ecosystem, and a list put together here was an allocation
	// a request.
	if slices.Contains(PackageRegistries, v) || slices.Contains(ContainerRegistries, v) {
		return v, nil
	}
	return "", Invalid(field, "must be one of %s (got %q)", strings.Join(append(PackageRegistries[:len(PackageRegistries):len(PackageRegistries)], ContainerRegistries...), ", "), s)
}

// IsPackageRegistry reports whether r is a package ecosystem.
func IsPackageRegistry(r string) bool {
	for _, p := range PackageRegistries {
		if p == r {
			return true
		}
	}
	return false
}

// Threat is a stored threat report: identity, duplicate key, review state
// and details.
type Threat struct {
	ID                 string
	ReportType         ReportType
	ResourceIdentifier string
	// Registry is the ecosystem; "" when none was given (non-package reports).
	Registry string
	// CanonicalKey is the normalised duplicate key (docs/api/submit.md, "Duplicates").
	CanonicalKey string
	Status       Status
	SubmitterID  string
	Revision     int
	// Version counts the report's content: 1 as submitted, +1 at each change
	// applied to it (docs/cli.md, content versions). Review decisions name the version
	// they were made on.
	Version    int
	CreatedAt  time.Time
	UpdatedAt  time.Time
	VerifiedAt *time.Time
	// VerifiedBy is the public name of the reviewer who verified it.
	VerifiedBy string
	// DisputedAt is when false-positive votes put the verified report back
	// in review (nil: no open dispute); KeptAt when a reviewer last kept it
	// after one. Votes count from the later of KeptAt and VerifiedAt.
	DisputedAt *time.Time
	KeptAt     *time.Time
	// Source and UpstreamID record provenance of imported reports.
	Source     string
	UpstreamID string
	// UpstreamModified is the upstream record's modification time (imports).
	UpstreamModified *time.Time
	// AllVersions means every version is affected whatever version_info
	// lists (OSV "introduced: 0" with no fix).
	AllVersions bool
	// LegacySTIXIDs marks a report stored before migration 0021: its STIX
	// objects keep the ids they were first published with (STIXIDs).
	LegacySTIXIDs bool
	Details       Details
	// IOCs are the report's indicators as Derive worked them out when its
	// content was last written (submitted, changed, imported). Storage
	// keeps them with the content; every reader (the index, TAXII, the
	// exports, MISP, the web pages) reads these instead of working them
	// out again.
	IOCs []ioc.IOC
}

// ContactVisibleTo is the one rule of who sees a report's contact e-mail
// (docs/api/records.md): its submitter (submitterID) and reviewers. Every
// output (records, exports, the check answer kept by the index) follows it.
func ContactVisibleTo(submitterID string, viewer Principal) bool {
	return viewer.User.Role.CanReview() || viewer.User.ID != "" && viewer.User.ID == submitterID
}

// ShowsContactTo says whether viewer may see t's contact e-mail: there is
// one, and ContactVisibleTo.
func (t Threat) ShowsContactTo(viewer Principal) bool {
	return t.Details.ContactEmail != "" && ContactVisibleTo(t.SubmitterID, viewer)
}

// VisibleTo returns t as viewer may see it: without the contact e-mail
// unless ShowsContactTo.
func (t Threat) VisibleTo(viewer Principal) Threat {
	if t.Details.ContactEmail != "" && !t.ShowsContactTo(viewer) {
		t.Details.ContactEmail = ""
	}
	return t
}
