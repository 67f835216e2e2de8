package firewall

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/analysis"
)

// RuleSuspicious holds a version whose analysis found it suspicious while
// its report is pending (docs/analysis.md).
const RuleSuspicious = "suspicious"

// AnalysedEcosystems are the firewall's ecosystems whose archives package
// analysis reads.
var AnalysedEcosystems = []string{"npm", "pypi", "go", "rubygems", FirewallCargo, core.RegistryVSCode, core.RegistryOpenVSX}

// Analyses is what package analysis says of the versions the firewall
// judges, as this daemon last read it (Set): the versions whose analysis
// has not ended, and those a pending report of a suspicious verdict holds.
// Queue, when set, queues a version for analysis and says whether it was
// new to the queue (it is called once per version a daemon sees, and may
// write to the store).
type Analyses struct {
	Queue func(analysis.Key) bool

	mu    sync.RWMutex
	byPkg map[string]map[string]analysis.Hold // folded registry\x00name → version
	gen   atomic.Int64
	// queued are versions queued here since the last Set: unfinished
	// until the store says otherwise.
	queued  map[string]map[string]analysis.Key // as byPkg
	nqueued int
}

// NewAnalyses returns an empty view.
func NewAnalyses() *Analyses {
	return &Analyses{byPkg: map[string]map[string]analysis.Hold{}, queued: map[string]map[string]analysis.Key{}}
}

func pkgKey(registry, name string) string { return registry + "\x00" + foldName(registry, name) }

// FirewallName is the firewall's name of a reports' registry (crates.io:
// cargo), the inverse of RegistryOfFirewall.
func FirewallName(registry string) string { return firewallOf(registry) }

// FoldName is name as the firewall compares names of registry (npm and
// NuGet in lower case, PyPI's PEP 503 form, crates.io's - for _): the
// ledger keeps names so.
func FoldName(registry, name string) string { return foldName(registry, name) }

// firewallOf is the firewall's name of a reports' registry.
func firewallOf(registry string) string {
	switch registry {
	case core.RegistryCrates:
		return FirewallCargo
	case core.RegistryPackagist:
		return FirewallComposer
	}
	return registry
}

// Set replaces the holds with what the store holds now.
func (a *Analyses) Set(holds []analysis.Hold) {
	by := map[string]map[string]analysis.Hold{}
	for _, h := range holds {
		k := pkgKey(firewallOf(h.Ecosystem), h.Name)
		if by[k] == nil {
			by[k] = map[string]analysis.Hold{}
		}
		prev, ok := by[k][h.Version]
		if ok && prev.Suspect {
			continue
		}
		by[k][h.Version] = h
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !sameHolds(a.byPkg, by) {
		a.gen.Add(1)
	}
	a.byPkg, a.queued, a.nqueued = by, map[string]map[string]analysis.Key{}, 0
}

func sameHolds(a, b map[string]map[string]analysis.Hold) bool {
	return suspects(a) == suspects(b)
}

// suspects identifies the suspect holds.
func suspects(m map[string]map[string]analysis.Hold) string {
	var out []string
	for k, vs := range m {
		if f := holdsFingerprint(vs); f != "" {
			out = append(out, k+"="+f)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ";")
}

// Generation changes whenever the suspects change.
func (a *Analyses) Generation() int64 {
	if a == nil {
		return 0
	}
	return a.gen.Load()
}

// of returns the holds of a package's versions (nil: none).
func (a *Analyses) of(registry, name string) map[string]analysis.Hold {
	if a == nil {
		return nil
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	pk := pkgKey(registry, name)
	hs := a.byPkg[pk]
	var out map[string]analysis.Hold
	for _, k := range a.queued[pk] {
		if _, ok := hs[k.Version]; ok {
			continue
		}
		if out == nil {
			out = maps(hs)
		}
		out[k.Version] = analysis.Hold{Key: k, Unfinished: true}
	}
	if out == nil {
		return hs
	}
	return out
}

func maps(m map[string]analysis.Hold) map[string]analysis.Hold {
	out := make(map[string]analysis.Hold, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// analyse queues one version of a package the firewall serves (not a
// private name, in an analysed ecosystem) unless the holds name it; a
// version new to the queue counts as unfinished until the store's holds
// are read again. It says whether the holds changed.
func (a *Analyses) analyse(v Verdict, version string) bool {
	if a == nil || a.Queue == nil || v.Private || version == "" || !slices.Contains(AnalysedEcosystems, v.Registry) {
		return false
	}
	if _, ok := v.holds[version]; ok {
		return false
	}
	k := analysis.Key{Ecosystem: RegistryOfFirewall(v.Registry), Name: v.Name, Version: version}
	if v.Registry == "pypi" {
		k.Name = foldName(v.Registry, v.Name)
	}
	if !a.Queue(k) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	pk := pkgKey(v.Registry, v.Name)
	if _, ok := a.queued[pk][version]; ok || a.nqueued >= analysis.MaxHolds {
		return false
	}
	if a.queued[pk] == nil {
		a.queued[pk] = map[string]analysis.Key{}
	}
	a.queued[pk][version] = k
	a.nqueued++
	return true
}

// Fetched queues a version whose file or document the firewall served
// for analysis.
func (p *Policy) Fetched(v Verdict, version string) { p.analyses.analyse(v, version) }

// holdsFingerprint identifies what the holds say of a package's versions
// that decides a rendering: the suspects. A version waiting for its
// analysis makes its rendering expire soon instead (Ruling.Recheck), so
// that queueing it, or its analysis ending, renders nothing anew.
func holdsFingerprint(hs map[string]analysis.Hold) string {
	var vs []string
	for v, h := range hs {
		if h.Suspect {
			vs = append(vs, v+":"+h.ReportID)
		}
	}
	if len(vs) == 0 {
		return ""
	}
	slices.Sort(vs)
	return strings.Join(vs, ",")
}

// holdVersion is the version analysis knows: as the registry lists it.
func holdVersion(version string, f Facts) string {
	if f.Listed != "" {
		return f.Listed
	}
	return version
}

// young says whether a version is in its quarantine, or past it by no
// more than analysis.max_wait when the quarantine waits for analysis:
// then it is analysed before it is served.
func (p *Policy) young(v Verdict, f Facts, now time.Time) bool {
	w := p.Window(v.Registry, v.Name)
	if w <= 0 || v.Private || f.Unjudged {
		return false
	}
	from := f.Published
	if f.Appeared.After(from) {
		from = f.Appeared
	}
	if from.IsZero() {
		return p.settings.Quarantine.MissingTime == "hold"
	}
	if p.settings.Quarantine.UntilAnalysed {
		w += p.settings.Quarantine.MaxWait
	}
	return now.Before(from.Add(w))
}
