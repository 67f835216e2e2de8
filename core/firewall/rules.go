package firewall

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/core/versioning"
)

// Settings are the firewall's rules (firewall.rules), quarantine
// (firewall.quarantine) and decision keeping.
type Settings struct {
	// Actions maps each rule (FirewallRules) to its action
	// (FirewallActions); a rule not in it has its default.
	Actions map[string]string
	// Quarantine is how long a new version is held.
	Quarantine Quarantine
}

// DefaultMaxWait is analysis.max_wait: how long past its quarantine a
// version waits for its analysis (Quarantine.UntilAnalysed).
const DefaultMaxWait = 24 * time.Hour

// Quarantine is firewall.quarantine: a version is held until its publish
// time plus the window of its package (Window).
type Quarantine struct {
	// Default applies to every ecosystem (0 = off).
	Default time.Duration
	// Ecosystems override Default per ecosystem.
	Ecosystems map[string]time.Duration
	// Packages override both for names a glob matches.
	Packages []PackageWindow
	// Exclude are the name globs, per ecosystem, never quarantined.
	Exclude map[string][]string
	// MissingTime is "hold" (a version without a publish time is held for
	// the whole window from when the firewall first saw it) or "allow".
	MissingTime string
	// UntilAnalysed holds a version whose quarantine ends before its
	// analysis does until it ends, at most MaxWait past its quarantine
	// (firewall.quarantine.until_analysed, analysis.max_wait).
	UntilAnalysed bool
	MaxWait       time.Duration
}

// PackageWindow is one firewall.quarantine.packages entry.
type PackageWindow struct {
	Ecosystem, Name string
	Duration        time.Duration
}

// DefaultActions are the rules' actions unless configured.
var DefaultActions = map[string]string{
	RuleMalicious:      ActionBlock,
	RuleQuarantine:     ActionBlock,
	RuleInstallScripts: ActionWarn,
	RuleSuspicious:     ActionBlock,
}

// DefaultQuarantine is firewall.quarantine.default.
const DefaultQuarantine = 48 * time.Hour

// CheckSettings validates settings: an error starts with the key at fault
// ("firewall.rules.x: …").
func CheckSettings(s Settings) error { return s.check() }

// check validates settings and fills in defaults and folded names.
func (s *Settings) check() error {
	acts := map[string]string{}
	for r, a := range DefaultActions {
		acts[r] = a
	}
	for r, a := range s.Actions {
		if !slices.Contains(FirewallRules, r) {
			return fmt.Errorf("firewall.rules.%s: unknown rule: rules are %s", r, strings.Join(FirewallRules, ", "))
		}
		if !slices.Contains(FirewallActions, a) {
			return fmt.Errorf("firewall.rules.%s: unknown action %q: actions are %s", r, a, strings.Join(FirewallActions, ", "))
		}
		acts[r] = a
	}
	s.Actions = acts
	q := &s.Quarantine
	if q.Default < 0 {
		return fmt.Errorf("firewall.quarantine.default: must not be negative")
	}
	if q.MaxWait < 0 {
		return fmt.Errorf("analysis.max_wait: must not be negative")
	}
	switch q.MissingTime {
	case "":
		q.MissingTime = "hold"
	case "hold", "allow":
	default:
		return fmt.Errorf("firewall.quarantine.missing_time: %q is neither hold nor allow", q.MissingTime)
	}
	known := func(key, eco string) error {
		if !slices.Contains(FirewallEcosystems, eco) {
			return fmt.Errorf("%s: unknown ecosystem %q: ecosystems are %s", key, eco, strings.Join(FirewallEcosystems, ", "))
		}
		return nil
	}
	for eco, d := range q.Ecosystems {
		if err := known("firewall.quarantine.ecosystems", eco); err != nil {
			return err
		}
		if d < 0 {
			return fmt.Errorf("firewall.quarantine.ecosystems.%s: must not be negative", eco)
		}
	}
	for i, p := range q.Packages {
		key := fmt.Sprintf("firewall.quarantine.packages[%d]", i)
		if err := known(key+".ecosystem", p.Ecosystem); err != nil {
			return err
		}
		if strings.TrimSpace(p.Name) == "" {
			return fmt.Errorf("%s.name: is required (a name or a glob)", key)
		}
		if p.Duration < 0 {
			return fmt.Errorf("%s.duration: must not be negative", key)
		}
		q.Packages[i].Name = foldName(p.Ecosystem, p.Name)
	}
	for eco, globs := range q.Exclude {
		if err := known("firewall.quarantine.exclude", eco); err != nil {
			return err
		}
		for i, g := range globs {
			q.Exclude[eco][i] = liftName(eco, g)
		}
	}
	return nil
}

// specificity orders globs: an exact name over any glob, a longer glob
// over a shorter one.
func specificity(glob string) int {
	if !strings.ContainsAny(glob, "*?") {
		return 1 << 30
	}
	return len(glob)
}

// Window is the quarantine of a package: 0 when it is not quarantined
// (off, excluded, private, or OCI).
func (p *Policy) Window(registry, name string) time.Duration {
	q := p.settings.Quarantine
	if registry == "oci" || p.Private(registry, name) {
		return 0
	}
	strict := liftName(registry, name)
	for _, g := range q.Exclude[registry] {
		if globMatch(g, strict) {
			return 0
		}
	}
	n := foldName(registry, name)
	best, found := -1, time.Duration(0)
	for _, pw := range q.Packages {
		if pw.Ecosystem == registry && globMatch(pw.Name, n) && specificity(pw.Name) > best {
			best, found = specificity(pw.Name), pw.Duration
		}
	}
	if best >= 0 {
		return found
	}
	if d, ok := q.Ecosystems[registry]; ok {
		return d
	}
	return q.Default
}

// Action is a rule's action.
func (p *Policy) Action(rule string) string { return p.settings.Actions[rule] }

// Facts are what a registry says of one version, beside its reports.
type Facts struct {
	// Published is its publish time (zero when the registry gives none).
	Published time.Time
	// FirstSeen is when the firewall first saw it (for missing_time).
	FirstSeen time.Time
	// NewScripts are the install scripts it declares that the version
	// before it did not (npm).
	NewScripts []string
	// Previous is the version before it, when NewScripts is set.
	Previous string
	// Listed is the version as the registry lists it when that says more
	// than the version (RubyGems' 1.0.0-java): a hold names it.
	Listed string
	// Unjudged: the quarantine does not judge it in this listing (a
	// version past FactsPerDocument).
	Unjudged bool
	// Appeared is when the version appeared after its package was first
	// listed, when its registry gives an earlier time (AuthorTimes): it
	// is held from then.
	Appeared time.Time
}

// Ruling is the firewall's decision about one version.
type Ruling struct {
	// Rule and Action decide: the strongest action of the rules that
	// apply (and are not waived); Action "" when none applies.
	// Action ActionWaived when the only rules that apply are
	// waived (Rule is then the first of them).
	Rule, Action string
	// Blocked is set when the malicious rule applies.
	Blocked *Blocked
	// Until is the end of a quarantine hold (zero when not held).
	Until time.Time
	// Message is the text of the deciding rule (the 403's error, the
	// warning header's text).
	Message string
	// Warnings are "<rule>: <text>" of each rule whose action is warn.
	Warnings []string
	// Findings are the strongest findings of a suspicious version's
	// analysis, when the suspicious rule decides.
	Findings []analysis.Finding
	// Recheck, for a version held until its analysis ends, is when a
	// rendering that held it is judged again (the analysis may have
	// ended; its end changes no fingerprint).
	Recheck time.Time
}

// AnalysisRecheck is how often a rendering that holds a version until its
// analysis ends is judged again.
const AnalysisRecheck = 5 * time.Second

// Refused says whether the version is refused.
func (r Ruling) Refused() bool { return r.Action == ActionBlock }

// Recorded says whether the request is a decision to record.
func (r Ruling) Recorded() bool { return r.Action != "" }

// Decide judges one version of v's package with facts at now, waivers
// lifting rules.
func (p *Policy) Decide(v Verdict, version string, f Facts, now time.Time, ws *Waivers) Ruling {
	type hit struct{ rule, action, msg string }
	var hits []hit
	var out Ruling
	if b := v.Check(version); b != nil {
		out.Blocked = b
		hits = append(hits, hit{RuleMalicious, p.Action(RuleMalicious), b.Message()})
	}
	// A suspicious version's pending report decides before its quarantine:
	// it says more.
	if h, ok := v.holds[holdVersion(version, f)]; ok && h.Suspect {
		out.Findings = h.Findings
		hits = append(hits, hit{RuleSuspicious, p.Action(RuleSuspicious), fmt.Sprintf(
			"Held by threatd: %s %s@%s is suspicious (%s); a reviewer decides", v.Registry, v.Name, version, h.Strongest)})
	}
	if w := p.Window(v.Registry, v.Name); w > 0 && !v.Private && !f.Unjudged {
		from, seen := f.Published, ""
		if from.IsZero() && p.settings.Quarantine.MissingTime == "hold" {
			from, seen = f.FirstSeen, "first seen"
		}
		if !f.Appeared.IsZero() && f.Appeared.After(from) {
			from, seen = f.Appeared, "appeared"
		}
		h := v.holds[holdVersion(version, f)]
		waiting := p.settings.Quarantine.UntilAnalysed && h.Unfinished && !from.IsZero() && !now.Before(from.Add(w)) &&
			now.Before(from.Add(w+p.settings.Quarantine.MaxWait))
		if waiting {
			out.Until = from.Add(w + p.settings.Quarantine.MaxWait).UTC()
			out.Recheck = now.Add(AnalysisRecheck)
			if out.Recheck.After(out.Until) {
				out.Recheck = out.Until
			}
			listed := version
			if f.Listed != "" {
				listed = f.Listed
			}
			hits = append(hits, hit{RuleQuarantine, p.Action(RuleQuarantine), fmt.Sprintf(
				"Held by threatd: %s %s@%s is being analysed; its quarantine of %s ended %s ago, and it is held until its analysis ends, at most until %s",
				v.Registry, v.Name, listed, HumanDuration(w), HumanDuration(now.Sub(from.Add(w))), out.Until.Format(time.RFC3339))})
		} else if !from.IsZero() && now.Before(from.Add(w)) {
			out.Until = from.Add(w).UTC()
			what, note := "was published", ""
			switch seen {
			case "first seen":
				what = "has no publish time and was first seen"
			case "appeared":
				what = "appeared"
				if !f.Published.IsZero() {
					note = " (its registry dates it " + f.Published.UTC().Format(time.DateOnly) + ")"
				}
			}
			listed := version
			if f.Listed != "" {
				listed = f.Listed
			}
			hits = append(hits, hit{RuleQuarantine, p.Action(RuleQuarantine), fmt.Sprintf(
				"Held by threatd: %s %s@%s %s %s ago%s; quarantine is %s, until %s",
				v.Registry, v.Name, listed, what, HumanDuration(now.Sub(from)), note, HumanDuration(w), out.Until.Format(time.RFC3339))})
		}
	}
	if len(f.NewScripts) > 0 {
		hits = append(hits, hit{RuleInstallScripts, p.Action(RuleInstallScripts), fmt.Sprintf(
			"%s %s@%s adds install scripts (%s) that %s did not have",
			v.Registry, v.Name, version, strings.Join(f.NewScripts, ", "), f.Previous)})
	}
	rank := func(a string) int { return len(FirewallActions) - slices.Index(FirewallActions, a) }
	waived := ""
	for _, h := range hits {
		if h.action == ActionOff || h.action == "" {
			continue
		}
		if ws.Lifts(v.Registry, v.Name, version, h.rule, now) {
			if waived == "" {
				waived = h.rule
			}
			continue
		}
		if h.action == ActionWarn {
			out.Warnings = append(out.Warnings, h.rule+": "+h.msg)
		}
		if out.Action == "" || rank(h.action) > rank(out.Action) {
			out.Rule, out.Action, out.Message = h.rule, h.action, h.msg
		}
	}
	if out.Action == "" && waived != "" {
		out.Rule, out.Action = waived, ActionWaived
	}
	// A refusal says who refused and by which rule (malicious and
	// quarantine say it in their own words).
	if out.Action == ActionBlock && out.Rule == RuleInstallScripts {
		out.Message = "Blocked by threatd: " + out.Message + " (rule install_scripts)"
	}
	// The threat ids and the hold's end belong to the rule that decides.
	if out.Rule != RuleMalicious {
		out.Blocked = nil
	}
	if out.Rule != RuleQuarantine {
		out.Until, out.Recheck = time.Time{}, time.Time{}
	}
	if out.Rule != RuleSuspicious {
		out.Findings = nil
	}
	return out
}

// HumanDuration writes d as people read it: "3d", "2d4h", "5h12m", "40m",
// "12s".
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	}
	days, h := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, h)
}

// Waivers are the waivers in force, as a daemon holds them.
type Waivers struct {
	list []Waiver
	// Generation changes whenever the set changes: renderings that
	// depend on waivers are kept under it.
	Generation string
}

// NewWaivers holds ws, their names folded as the registries compare them.
func NewWaivers(ws []Waiver) *Waivers {
	out := &Waivers{}
	var b strings.Builder
	for _, w := range ws {
		w.Name = liftName(w.Ecosystem, w.Name)
		out.list = append(out.list, w)
		fmt.Fprintf(&b, "%s|%d;", w.ID, w.Until.UnixNano())
	}
	out.Generation = b.String()
	return out
}

// Lifts says whether a waiver in force at now lifts rule for version of
// the package.
func (ws *Waivers) Lifts(registry, name, version, rule string, now time.Time) bool {
	if ws == nil {
		return false
	}
	n := ""
	for _, w := range ws.list {
		if w.Rule != rule || w.Ecosystem != registry || !now.Before(w.Until) {
			continue
		}
		if n == "" {
			n = liftName(registry, name)
		}
		if !globMatch(w.Name, n) {
			continue
		}
		if w.Version == "" || w.Version == version || versioning.Canonical(registry, w.Version) == versioning.Canonical(registry, version) {
			return true
		}
	}
	return false
}

// Covers says whether any waiver in force names the package (a rendering
// of it depends on the waivers).
func (ws *Waivers) Covers(registry, name string) bool {
	if ws == nil || len(ws.list) == 0 {
		return false
	}
	n := liftName(registry, name)
	for _, w := range ws.list {
		if w.Ecosystem == registry && globMatch(w.Name, n) {
			return true
		}
	}
	return false
}
