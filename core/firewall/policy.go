// Package firewall decides what the registry firewall lets through: for a
// package of npm, PyPI or Go, which of its versions verified reports name,
// with the same matching as check-malicious, and which names are private
// (never blocked by community reports). It knows nothing of HTTP: the
// proxies that apply its decisions live in core/api.
package firewall

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/core/versioning"
)

// Matcher returns the verified reports under keys that affect version ("" =
// any version), most recently verified first: the index of check-malicious.
type Matcher interface {
	Matches(ctx context.Context, keys []string, version string) ([]core.Threat, error)
}

// Policy decides which package versions are blocked.
type Policy struct {
	index Matcher
	// community names the campaigns of blocking reports (nil: none).
	community core.Communities
	// private holds, per registry, the name globs that reports never block.
	private map[string][]string
	// settings are the rules' actions and the quarantine.
	settings Settings
	// analyses are package analysis's holds (nil: none).
	analyses *Analyses
}

// SetAnalyses makes the policy judge by package analysis's holds (the
// suspicious rule, firewall.quarantine.until_analysed) and queue versions
// through a.
func (p *Policy) SetAnalyses(a *Analyses) { p.analyses = a }

// NewPolicy returns a policy over index with the private name globs of each
// registry (firewall.private), which must be one of served; a glob's *
// matches any run of characters, "/" included, and ? one character.
func NewPolicy(index Matcher, private map[string][]string, served []string) (*Policy, error) {
	p := &Policy{index: index, private: map[string][]string{}}
	p.settings.Actions = DefaultActions
	for reg, globs := range private {
		if !slices.Contains(served, reg) {
			return nil, fmt.Errorf("firewall.private: %q is not a registry the firewall serves (%s)", reg, strings.Join(served, ", "))
		}
		for _, g := range globs {
			if strings.TrimSpace(g) == "" {
				return nil, fmt.Errorf("firewall.private.%s: an empty glob", reg)
			}
			p.private[reg] = append(p.private[reg], foldName(reg, g))
		}
	}
	return p, nil
}

// Generation changes whenever the verified reports change (0 when the
// index does not say): what is judged of every package at once (a
// registry-wide listing) stays valid while it holds.
func (p *Policy) Generation() int64 {
	var g int64
	if v, ok := p.index.(interface{ Version() int64 }); ok {
		g = v.Version()
	}
	return g<<20 + p.analyses.Generation()
}

// Configure sets the rules' actions and the quarantine (validated against
// folded as names are).
func (p *Policy) Configure(s Settings) error {
	if err := s.check(); err != nil {
		return err
	}
	p.settings = s
	return nil
}

// foldName is the form names and globs are compared in: npm and NuGet
// names are case-insensitive, PyPI's also treat - _ . alike (PEP 503),
// crates.io's - and _; Go module paths, Maven coordinates and gem names
// are case-sensitive; Packagist names and editor extensions
// (publisher.name) are not.
func foldName(registry, name string) string {
	switch registry {
	case core.RegistryNPM, core.RegistryNuGet:
		return strings.ToLower(name)
	case core.RegistryPyPI:
		return core.NormalizePyPIName(name)
	case FirewallCargo:
		return strings.ReplaceAll(strings.ToLower(name), "_", "-")
	case FirewallComposer, core.RegistryPackagist, core.RegistryVSCode, core.RegistryOpenVSX:
		return strings.ToLower(name)
	}
	return name
}

// liftName is the form names and globs are compared in where a match
// lifts protection (a waiver, a quarantine exclusion): as foldName, except
// that npm names are case-sensitive there. npm's registry compares new
// names in lower case, but legacy mixed-case names (QNPM beside qnpm) are
// separate packages, so a waiver of one must not lift the other. Reports
// and private names keep foldName: they only ever protect more.
func liftName(registry, name string) string {
	if registry == core.RegistryNPM {
		return name
	}
	return foldName(registry, name)
}

// Private says whether name matches one of registry's private globs.
func (p *Policy) Private(registry, name string) bool {
	n := foldName(registry, name)
	for _, g := range p.private[registry] {
		if globMatch(g, n) {
			return true
		}
	}
	return false
}

// globMatch matches s against a glob where * is any run of characters
// and ? is one character.
func globMatch(glob, s string) bool {
	for len(glob) > 0 {
		switch glob[0] {
		case '*':
			rest := glob[1:]
			for i := len(s); i >= 0; i-- {
				if globMatch(rest, s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			s, glob = s[1:], glob[1:]
		default:
			if s == "" || s[0] != glob[0] {
				return false
			}
			s, glob = s[1:], glob[1:]
		}
	}
	return s == ""
}

// Verdict is what verified reports say of one package: the reports under
// its name, newest first (none for a clean, private or unknown name).
type Verdict struct {
	// Registry is the firewall's name of the ecosystem (cargo, not
	// crates.io: FirewallEcosystems); reports names it
	// RegistryOfFirewall(Registry).
	Registry, Name string
	// Private is set when the name matches firewall.private.
	Private bool
	threats []core.Threat
	// lists are the threats' version lists in canonical form
	// (core/versioning), "" for one that affects every version.
	lists []string
	// community names the campaigns of the blocking reports.
	community core.Communities
	// holds are package analysis's holds of the package's versions.
	holds map[string]analysis.Hold
}

// Lookup returns the verdict for a package. A name the registry would not
// accept cannot be judged (no report could name it, but the upstream may
// still read it as another name): it is an *Unjudgeable, never a clean
// verdict.
func (p *Policy) Lookup(ctx context.Context, registry, name string) (Verdict, error) {
	v := Verdict{Registry: registry, Name: name, community: p.community}
	if p.Private(registry, name) {
		v.Private = true
		return v, nil
	}
	reports := RegistryOfFirewall(registry)
	key, err := core.CanonicalKey(core.TypePackage, reports, name)
	if err != nil {
		msg := err.Error()
		if fe, ok := err.(*core.FieldError); ok {
			msg = fe.Message
		}
		return v, CannotJudge(registry, "package name", name, "%s", msg)
	}
	v.holds = p.analyses.of(registry, name)
	keys := []string{key}
	if registry == core.RegistryVSCode || registry == core.RegistryOpenVSX {
		// The galleries compare extensions in any case, and reports keep
		// the name as written: a report of the name as asked, or in lower
		// case (the galleries' ids), names it.
		if lower, err := core.CanonicalKey(core.TypePackage, reports, strings.ToLower(name)); err == nil && lower != key {
			keys = append(keys, lower)
		}
	}
	if v.threats, err = p.index.Matches(ctx, keys, ""); err != nil {
		return v, err
	}
	v.lists = make([]string, len(v.threats))
	for i, t := range v.threats {
		if !t.AllVersions {
			v.lists[i] = versioning.CanonicalList(reports, t.Details.VersionInfo)
		}
	}
	return v, nil
}

// Clean says whether no report names any version of the package.
func (v Verdict) Clean() bool { return len(v.threats) == 0 }

// Fingerprint identifies the reports behind the verdict by what decides
// blocking (each report's id, version list and every-version flag): two
// verdicts of the same package with the same fingerprint block the same
// versions, and an approved revision of a version list changes it.
func (v Verdict) Fingerprint() string {
	var b strings.Builder
	for _, t := range v.threats {
		fmt.Fprintf(&b, "%s|%t|%s;", t.ID, t.AllVersions, t.Details.VersionInfo)
	}
	if f := holdsFingerprint(v.holds); f != "" {
		b.WriteString("analysis:" + f)
	}
	return b.String()
}

// Blocking returns the reports that block version, newest first: those
// that affect every version (no version_info, or an OSV range with no
// fix), and those whose version_info names it as the registry's client
// compares versions (core/versioning: npm's v1.0.1 is 1.0.1, PyPI's
// 1.0.1.0 and 1.0.1+local are 1.0.1, Go's v2.0.0+incompatible is 2.0.0),
// as check-malicious matches. A version that is "" (one the firewall
// could not read) is blocked by every report of the package.
func (v Verdict) Blocking(version string) []core.Threat {
	if len(v.threats) == 0 {
		return nil
	}
	var out []core.Threat
	q := versioning.NewQuery(RegistryOfFirewall(v.Registry), version)
	for i, t := range v.threats {
		if v.lists[i] == "" || version == "" || q.In(v.lists[i]) {
			out = append(out, t)
		}
	}
	return out
}

// BlocksEvery says whether a report blocks every version of the package.
func (v Verdict) BlocksEvery() []core.Threat {
	var out []core.Threat
	for _, t := range v.threats {
		if t.AllVersions || strings.TrimSpace(t.Details.VersionInfo) == "" {
			out = append(out, t)
		}
	}
	return out
}

// Blocked is the refusal of one package version.
type Blocked struct {
	Registry, Name, Version string
	// Threats are the verified reports that block it, newest first.
	Threats []core.Threat
	// Campaigns name the campaigns of those reports, each once.
	Campaigns []string
}

// SetCommunity makes refusals name the campaigns of their reports, as c
// knows them.
func (p *Policy) SetCommunity(c core.Communities) { p.community = c }

// Blocked is the refusal of a version (any version: "") by these reports,
// naming their campaigns.
func (p *Policy) Blocked(registry, name, version string, ts []core.Threat) *Blocked {
	return newBlocked(p.community, registry, name, version, ts)
}

func newBlocked(c core.Communities, registry, name, version string, ts []core.Threat) *Blocked {
	b := &Blocked{Registry: registry, Name: name, Version: version, Threats: ts}
	if c == nil {
		return b
	}
	for _, t := range ts {
		for _, camp := range c.OfThreat(t).Campaigns {
			if !slices.Contains(b.Campaigns, camp.Name) {
				b.Campaigns = append(b.Campaigns, camp.Name)
			}
		}
	}
	return b
}

// Message is the refusal's text: "Blocked by threatd: npm evil@1.0.1 is
// malicious", followed by the ids of the reports, so that the person at
// the terminal can look them up. Each id is written threat_id_<id>: npm
// replaces every free-standing UUID in what it prints with "***", and one
// joined to a word is left alone.
func (b Blocked) Message() string {
	version := b.Version
	if version == "" {
		version = "*"
	}
	ids := b.ThreatIDs()
	for i, id := range ids {
		ids[i] = "threat_id_" + id
	}
	sep := "@"
	if b.Registry == FirewallOCI && !strings.Contains(version, ":") {
		sep = ":" // an image by its tag, as people write it
	}
	msg := fmt.Sprintf("Blocked by threatd: %s %s%s%s is malicious (%s)", b.Registry, b.Name, sep, version, strings.Join(ids, ", "))
	if len(b.Campaigns) > 0 {
		msg += "; campaign: " + strings.Join(b.Campaigns, ", ")
	}
	return msg
}

// Error implements error.
func (b Blocked) Error() string { return b.Message() }

// ThreatIDs are the ids of the blocking reports.
func (b Blocked) ThreatIDs() []string {
	ids := make([]string, len(b.Threats))
	for i, t := range b.Threats {
		ids[i] = t.ID
	}
	return ids
}

// Check returns the refusal of version, or nil when it may pass.
func (v Verdict) Check(version string) *Blocked {
	if ts := v.Blocking(version); len(ts) > 0 {
		return newBlocked(v.community, v.Registry, v.Name, version, ts)
	}
	return nil
}
