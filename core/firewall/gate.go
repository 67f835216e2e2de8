package firewall

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/threatd/threatd/core"
)

// Gate is where the firewall decides (docs/firewall.md): the policy, the
// waivers in force and the recorder of decisions and held versions, with
// the registries' adapters. The proxy (core/firewall/proxy) asks the gate
// one call per kind of thing it serves, and reads facts from the upstream
// for it through a FactReader: a document listing a package's versions
// (Document), a version's own file or document (Rule, then Decide to
// record what was served), an image (Image). A registry-wide listing
// judges each package with Listing, its facts read best effort.
type Gate struct {
	Policy   *Policy
	Recorder *Recorder
	Waivers  *WaiverCache
	// Adapters are the registries' adapters, by name.
	Adapters map[string]Adapter
}

// MaxWarnings bounds the warnings one answer carries.
const MaxWarnings = 10

// NeedsFacts says whether a package's versions are judged by more than
// their reports: a quarantine window, or install scripts the adapter
// reads. Then the proxy reads their facts from the upstream first.
func (g *Gate) NeedsFacts(a Adapter, v Verdict) bool {
	fs, ok := a.(FactSource)
	if !ok || v.Private {
		return false
	}
	if g.Policy.Action(RuleQuarantine) != ActionOff && g.Policy.Window(v.Registry, v.Name) > 0 {
		return true
	}
	return fs.Scripts() && g.Policy.Action(RuleInstallScripts) != ActionOff
}

// Version decides one version of v's package, as its documents list it
// (facts nil: by its reports alone), and records a held version. Reports
// and waivers judge the version reports name (VersionKeys: a RubyGems
// platform's 1.0.0-java is 1.0.0); the quarantine the version as listed,
// which has its own publish time.
func (g *Gate) Version(v Verdict, listed string, facts map[string]Facts) Ruling {
	now := time.Now()
	f := facts[listed]
	version := listed
	if vk, ok := g.Adapters[v.Registry].(VersionKeys); ok {
		if version = vk.ReportVersion(listed); version != listed {
			f.Listed = listed
		}
	}
	// A young version is queued for analysis before it is judged: with
	// until_analysed, a version past its quarantine waits for it.
	if g.Policy.young(v, f, now) && g.Policy.analyses.analyse(v, listed) {
		v.holds = g.Policy.analyses.of(v.Registry, v.Name)
	}
	r := g.Policy.Decide(v, version, f, now, g.Waivers.Current())
	// A version waiting for its analysis is no longer in quarantine: the
	// analysis queue knows it.
	if r.Rule == RuleQuarantine && !r.Until.IsZero() && r.Recheck.IsZero() {
		seen := f.FirstSeen
		if seen.IsZero() {
			// A version with a publish time: first seen when first held.
			seen = g.Recorder.FirstSeen(v.Registry, v.Name, listed, now)
		}
		g.Recorder.Held(HeldVersion{Ecosystem: v.Registry, Name: v.Name, Version: listed, Published: f.Published, FirstSeen: seen, Until: r.Until})
	}
	return r
}

// FactReader reads the facts of one package's versions where it is
// served: the proxy implements it over the upstream (publish times,
// install scripts). listing says the versions are a listing's (every
// version the package lists when versions is nil); have, when not nil, is
// what the document being judged lists, when it is its own facts
// document.
type FactReader interface {
	ReadFacts(ctx context.Context, versions []string, listing bool, have []Published) (map[string]Facts, error)
}

// Rule is the gate's call for a version's own file or document (and a
// file of several versions): the versions' facts are read through f when
// the package needs them (NeedsFacts), then each version is ruled
// (Version), in order. listing is passed on to f.
func (g *Gate) Rule(ctx context.Context, a Adapter, v Verdict, versions []string, listing bool, f FactReader) ([]Ruling, error) {
	var facts map[string]Facts
	if g.NeedsFacts(a, v) {
		var err error
		if facts, err = f.ReadFacts(ctx, versions, listing, nil); err != nil {
			return nil, err
		}
	}
	out := make([]Ruling, len(versions))
	for i, ver := range versions {
		out[i] = g.Version(v, ver, facts)
	}
	return out, nil
}

// Document is the gate's call for a document that lists the versions of
// v's package (rt's): when the package needs facts, the versions doc lists
// are read and their facts read through f (the document's own listing
// when it is its facts document); then the Judge of its rewrite (Listing)
// gathers into l.
func (g *Gate) Document(ctx context.Context, a Adapter, v Verdict, rt Route, doc Document, f FactReader, l *Listed) (Judge, error) {
	var facts map[string]Facts
	if rt.Name != "" && g.NeedsFacts(a, v) {
		listed, err := a.Versions(doc)
		if err != nil {
			return nil, err
		}
		versions := make([]string, len(listed))
		for i, pv := range listed {
			versions[i] = pv.Version
		}
		var have []Published
		if path, accept := a.(FactSource).FactsDocument(rt.Name); rt.OwnFacts || path == rt.Upstream && accept == rt.Accept {
			have = listed // the document is its own facts
		}
		if facts, err = f.ReadFacts(ctx, versions, true, have); err != nil {
			return nil, err
		}
	}
	return g.Listing(v, facts, l), nil
}

// Asker is who asked for what was decided: the user's e-mail and the
// client's address, as a decision records them.
type Asker struct{ User, ClientIP string }

// Decide records the decision r about one version (an artifact or a
// document of it alone), with its package URL; nothing when the ruling
// records none.
func (g *Gate) Decide(v Verdict, version string, r Ruling, by Asker) {
	if !r.Recorded() {
		return
	}
	d := FirewallDecision{Time: time.Now().UTC(), Ecosystem: v.Registry, Name: v.Name, Version: version, Rule: r.Rule, Action: r.Action,
		Until: r.Until, User: by.User, ClientIP: by.ClientIP}
	d.Purl = core.VersionPurl(RegistryOfFirewall(v.Registry), v.Name, version)
	if r.Blocked != nil {
		d.ThreatIDs = r.Blocked.ThreatIDs()
	}
	g.Recorder.Decide(d)
}

// Listed is what judging a listing's versions gathered: the warnings of
// the versions it serves and the earliest end of a hold (when the listing
// must be judged again).
type Listed struct {
	mu       sync.Mutex
	Warnings []string
	Expires  time.Time
}

// Listing is the Judge of a listing of v's package: a version is left out
// when refused; l gathers what the judging found.
func (g *Gate) Listing(v Verdict, facts map[string]Facts, l *Listed) Judge {
	return func(version string) (bool, string) {
		r := g.Version(v, version, facts)
		l.mu.Lock()
		defer l.mu.Unlock()
		until := r.Until
		if !r.Recheck.IsZero() {
			until = r.Recheck
		}
		if !until.IsZero() && (l.Expires.IsZero() || until.Before(l.Expires)) {
			l.Expires = until
		}
		if !r.Refused() && len(l.Warnings) < MaxWarnings {
			l.Warnings = append(l.Warnings, r.Warnings...)
		}
		return r.Refused(), r.Message
	}
}

// Image applies the malicious rule's action to a reported image
// name:reference (a waiver lifts it), records the decision, and returns
// the action and the refusal. Quarantine never applies to images.
func (g *Gate) Image(name, reference string, reports []core.Threat, by Asker) (string, *Blocked) {
	b := g.Policy.Blocked(FirewallOCI, name, reference, reports)
	action := g.Policy.Action(RuleMalicious)
	if g.Waivers.Current().Lifts(FirewallOCI, name, reference, RuleMalicious, time.Now()) {
		action = ActionWaived
	}
	if action != ActionOff {
		g.Recorder.Decide(FirewallDecision{Time: time.Now().UTC(), Ecosystem: FirewallOCI, Name: name, Version: reference,
			Purl: "pkg:docker/" + name + "@" + url.PathEscape(reference),
			Rule: RuleMalicious, Action: action, ThreatIDs: b.ThreatIDs(), User: by.User, ClientIP: by.ClientIP})
	}
	return action, b
}
