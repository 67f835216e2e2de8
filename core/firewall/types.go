package firewall

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// The firewall's rules (docs/firewall.md): why a version is refused,
// warned of or watched.
const (
	RuleMalicious      = "malicious"       // a verified report names the version
	RuleQuarantine     = "quarantine"      // younger than its quarantine
	RuleInstallScripts = "install_scripts" // npm: adds an install script
)

// FirewallRules are the rules, in the order they are judged.
var FirewallRules = []string{RuleMalicious, RuleQuarantine, RuleInstallScripts, RuleSuspicious}

// The actions of a rule (firewall.rules.<rule>), and "waived": a rule a
// waiver lifted, recorded each time it is used.
const (
	ActionBlock   = "block"
	ActionWarn    = "warn"
	ActionMonitor = "monitor"
	ActionOff     = "off"
	ActionWaived  = "waived"
)

// FirewallActions are the actions a rule may be given, strongest first.
var FirewallActions = []string{ActionBlock, ActionWarn, ActionMonitor, ActionOff}

// FirewallEcosystems are the firewall's names of the registries it serves
// and will serve: lower case, in configuration, commands, API bodies,
// decisions and messages.
var FirewallEcosystems = []string{"npm", "pypi", "go", "maven", "cargo", "rubygems", "nuget", "composer", "openvsx", "vscode", "oci"}

// The firewall's names that differ from the registry reports name.
const (
	FirewallCargo    = "cargo"
	FirewallOCI      = "oci"
	FirewallComposer = "composer"
)

// RegistryOfFirewall is the registry reports name for a firewall
// ecosystem (cargo: crates.io), "" for oci, whose reports are container
// reports of any registry.
func RegistryOfFirewall(ecosystem string) string {
	switch ecosystem {
	case FirewallCargo:
		return core.RegistryCrates
	case FirewallComposer:
		return core.RegistryPackagist
	case FirewallOCI:
		return ""
	}
	return ecosystem
}

// FirewallEcosystem reads an ecosystem's firewall name in any case.
func FirewallEcosystem(field, name string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if !slices.Contains(FirewallEcosystems, n) {
		return "", core.Invalid(field, "unknown ecosystem %q: ecosystems are %s", name, strings.Join(FirewallEcosystems, ", "))
	}
	return n, nil
}

// The webhook events of the firewall's decisions (a subscription receives
// them only when it names them).
const (
	EventFirewallBlocked = "firewall.blocked"
	EventFirewallWarned  = "firewall.warned"
)

// MaxWaiverReason bounds a waiver's reason; MaxWaiverName its name glob.
const (
	MaxWaiverReason = 1000
	MaxWaiverName   = 512
	// MaxWaiverFor bounds how long a waiver may last.
	MaxWaiverFor = 366 * 24 * time.Hour
	// MaxWaivers bounds the waivers in force: every daemon keeps them all
	// in memory and judges each request against them.
	MaxWaivers = 10000
)

// Waiver lifts one rule for one package version, or every version of the
// names a glob matches, until it ends.
type Waiver struct {
	ID        string
	Ecosystem string
	// Name is a package name or a glob (* any run, ? one character).
	Name string
	// Version is "" for every version.
	Version   string
	Rule      string
	Reason    string
	CreatedBy string
	CreatedAt time.Time
	Until     time.Time
}

// WaiverRequest is a waiver as a person asks for it.
type WaiverRequest struct {
	Ecosystem, Name, Version, Rule, Reason string
	// For is how long it lasts ("72h", "7d"); Until an end instead.
	For   string
	Until time.Time
}

// ParseFor reads a waiver's or a quarantine's duration: Go's form ("48h",
// "90m") or whole days ("7d"), positive.
func ParseFor(field, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, core.Invalid(field, "is required (a duration such as 72h or 7d)")
	}
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err != nil || fmt.Sprint(days) != n {
			return 0, core.Invalid(field, "%q is not a duration (such as 72h or 7d)", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, core.Invalid(field, "%q is not a duration (such as 72h or 7d)", s)
		}
	}
	if d <= 0 {
		return 0, core.Invalid(field, "must be positive (got %q)", s)
	}
	return d, nil
}

// NewWaiver validates a waiver request made by createdBy at now.
func NewWaiver(r WaiverRequest, createdBy string, now time.Time) (Waiver, error) {
	now = now.UTC().Truncate(time.Microsecond)
	w := Waiver{ID: uuid.NewString(), CreatedBy: createdBy, CreatedAt: now}
	var err error
	if w.Ecosystem, err = FirewallEcosystem("ecosystem", r.Ecosystem); err != nil {
		return Waiver{}, err
	}
	w.Name = strings.TrimSpace(r.Name)
	switch {
	case w.Name == "":
		return Waiver{}, core.Invalid("name", "is required (a package name or a glob such as @acme/*)")
	case len(w.Name) > MaxWaiverName:
		return Waiver{}, core.Invalid("name", "is longer than %d bytes", MaxWaiverName)
	case strings.ContainsAny(w.Name, "\x00\r\n\t "):
		return Waiver{}, core.Invalid("name", "contains white space or control characters")
	}
	w.Version = strings.TrimSpace(r.Version)
	if len(w.Version) > 256 || strings.ContainsAny(w.Version, "\x00\r\n\t *") {
		return Waiver{}, core.Invalid("version", "must be one version, at most 256 bytes, without spaces or globs (got %q)", w.Version)
	}
	if w.Rule = strings.TrimSpace(r.Rule); !slices.Contains(FirewallRules, w.Rule) {
		if w.Rule == "" {
			return Waiver{}, core.Invalid("rule", "is required: rules are %s", strings.Join(FirewallRules, ", "))
		}
		return Waiver{}, core.Invalid("rule", "unknown rule %q: rules are %s", w.Rule, strings.Join(FirewallRules, ", "))
	}
	if w.Reason = strings.TrimSpace(r.Reason); w.Reason == "" {
		return Waiver{}, core.Invalid("reason", "is required: say why the rule is lifted")
	} else if len(w.Reason) > MaxWaiverReason {
		return Waiver{}, core.Invalid("reason", "is longer than %d bytes", MaxWaiverReason)
	}
	switch {
	case strings.TrimSpace(r.For) != "" && !r.Until.IsZero():
		return Waiver{}, core.Invalid("for", "give either for or until, not both")
	case strings.TrimSpace(r.For) != "":
		d, err := ParseFor("for", r.For)
		if err != nil {
			return Waiver{}, err
		}
		if d > MaxWaiverFor {
			return Waiver{}, core.Invalid("for", "is longer than %s (366 days): a waiver must end", MaxWaiverFor)
		}
		w.Until = now.Add(d)
	case !r.Until.IsZero():
		if !r.Until.After(now) {
			return Waiver{}, core.Invalid("until", "is in the past (%s)", r.Until.UTC().Format(time.RFC3339))
		}
		if r.Until.Sub(now) > MaxWaiverFor {
			return Waiver{}, core.Invalid("until", "is more than 366 days away: a waiver must end")
		}
		w.Until = r.Until.UTC().Truncate(time.Microsecond)
	default:
		return Waiver{}, core.Invalid("for", "is required: a waiver must end (a duration such as 72h or 7d)")
	}
	return w, nil
}

// Wide says why a waiver is wide ("" when it is not): a name glob that
// names fewer than MinGlobLetters letters and digits (*, @*/*, a*: it
// lifts the rule for most of an ecosystem), or an end further than max
// from its making.
func (w Waiver) Wide(max time.Duration) string {
	if strings.ContainsAny(w.Name, "*?") {
		letters := 0
		for _, r := range w.Name {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				letters++
			}
		}
		if letters < MinGlobLetters {
			return fmt.Sprintf("of a name glob that names fewer than %d letters or digits (%s)", MinGlobLetters, w.Name)
		}
	}
	if w.Until.Sub(w.CreatedAt) > max {
		return "for longer than " + ForText(max)
	}
	return ""
}

// MinGlobLetters is how many letters and digits a waiver's name glob
// must name for a reviewer to make it (@acme/* names 4).
const MinGlobLetters = 3

// ForText writes a duration as ParseFor reads it: whole days as "7d",
// anything else in Go's form ("36h0m0s").
func ForText(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// FirewallDecision is one firewall decision about one package version: refused,
// warned of, watched or let through by a waiver.
type FirewallDecision struct {
	// Seq orders decisions (assigned by the store).
	Seq       int64
	Time      time.Time
	Ecosystem string
	Name      string
	Version   string
	Purl      string
	Rule      string
	Action    string
	ThreatIDs []string
	// Until is when a quarantine hold ends (zero otherwise).
	Until    time.Time
	User     string
	ClientIP string
	// Event is the webhook body of the decision (firewall.blocked or
	// firewall.warned), nil when it is no event; EventType its type.
	Event     []byte
	EventType string
}

// FirewallDecisionQuery is one page of decisions: those at or after Since, after
// the cursor After (a Seq), oldest first.
type FirewallDecisionQuery struct {
	Since time.Time
	After int64
	Limit int
}

// FirewallDecisionList is a page of decisions; More says whether more follow.
type FirewallDecisionList struct {
	Decisions []FirewallDecision
	More      bool
}

// HeldVersion is a version in quarantine as a daemon saw it: published (or first
// seen, when its registry gave no time) and held until.
type HeldVersion struct {
	Ecosystem string
	Name      string
	Version   string
	Published time.Time
	FirstSeen time.Time
	Until     time.Time
}

// HeldQuery is one page of the versions held at Now, by the end of their
// hold, then ecosystem, name and version; After is the cursor: the last
// row's until (RFC 3339 with nanoseconds), ecosystem, name and version
// joined by NUL.
type HeldQuery struct {
	Now   time.Time
	After string
	Limit int
}

// Cursor is the HeldQuery.After that continues a list after h.
func (h HeldVersion) Cursor() string {
	return h.Until.UTC().Format(time.RFC3339Nano) + "\x00" + h.Ecosystem + "\x00" + h.Name + "\x00" + h.Version
}

// FirewallStore keeps the firewall's waivers, decisions and held versions.
type FirewallStore interface {
	// CreateWaiver stores a waiver (NewWaiver made it), refusing one more
	// than MaxWaivers in force (ErrLimit).
	CreateWaiver(ctx context.Context, w Waiver) error
	// ListWaivers returns the waivers that end after now, newest first;
	// more than MaxWaivers of them is an error (ErrLimit), never a part
	// of them.
	ListWaivers(ctx context.Context, now time.Time) ([]Waiver, error)
	// DeleteWaiver removes a waiver (ErrNotFound when there is none).
	DeleteWaiver(ctx context.Context, id string) error
	// RecordDecisions stores decisions in one transaction, and queues the
	// event of each that has one for every subscription that names its
	// type (and its ecosystem, when the subscription has one).
	RecordDecisions(ctx context.Context, ds []FirewallDecision) error
	// ListDecisions returns one page of decisions (q.Limit 1..MaxPage).
	ListDecisions(ctx context.Context, q FirewallDecisionQuery) (FirewallDecisionList, error)
	// TrimDecisions removes the decisions made before before and the
	// holds that ended before it; returns how many decisions went.
	TrimDecisions(ctx context.Context, before time.Time) (int64, error)
	// RecordHeld stores versions seen held: a version already stored
	// keeps its first_seen, and takes the new published and until.
	RecordHeld(ctx context.Context, hs []HeldVersion) error
	// ListHeld returns one page of the versions held at q.Now
	// (q.Limit 1..MaxPage).
	ListHeld(ctx context.Context, q HeldQuery) ([]HeldVersion, error)
	// PinDigests records the digests reported images' tags resolved to
	// (at most MaxGetThreats pins), under their reports; a pin recorded
	// already is kept as it was.
	PinDigests(ctx context.Context, pins []DigestPin) error
	// PinnedDigests returns the digests pinned under these reports (at
	// most MaxGetThreats ids; at most MaxDigestPins each, the first
	// pinned).
	PinnedDigests(ctx context.Context, threatIDs []string) ([]DigestPin, error)
}

// DigestPin is a digest a reported image's tag resolved to, or one of the
// platform manifests of the index it resolved to: refused for as long as
// the report stands, wherever the tag moves afterwards.
type DigestPin struct {
	ThreatID, Digest string
	PinnedAt         time.Time
}

// MaxDigestPins bounds the digests pinned under one report (a tag moved
// again and again, an index of many platforms).
const MaxDigestPins = 1000
