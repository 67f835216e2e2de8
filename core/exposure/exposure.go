// Package exposure says who already has a version that turns out
// malicious (docs/exposure.md): the firewall's ledger of what it served
// and the projects' inventories of what their lockfiles list become
// exposures when a version they name becomes refused (a verification, an
// approved revision, an import, an analysis report), once per report and
// row, whichever daemon finds it first.
package exposure

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// EventFound is the event of a report's exposures (webhooks, syslog).
const EventFound = "exposure.found"

// MaxEventExposures bounds the exposures an event carries (its total
// says how many there are).
const MaxEventExposures = 1000

// Event is a report's exposure.found event, made once per report.
type Event struct {
	ThreatID string
	// Ecosystem is the report's registry (a subscription's filter).
	Ecosystem string
	Total     int64
	// Body is the event's JSON, as webhooks send it.
	Body []byte
	At   time.Time
}

// Kinds of exposure.
const (
	KindServed    = "served"    // a ledger row: the firewall served it
	KindInventory = "inventory" // a project's latest scan lists it
)

// Exposure is one ledger row or inventory of a version a report refuses.
type Exposure struct {
	ID       int64
	ThreatID string
	Purl     string
	Kind     string
	// Ecosystem (the firewall's name: cargo for crates.io), Name (as the
	// firewall folds it) and Version of the version.
	Ecosystem, Name, Version string
	User, TokenID, ClientIP  string
	Project                  string
	First, Last              time.Time
	Count                    int64
	FoundAt                  time.Time
}

// Item is one package version of a project's inventory, named as a
// Package is.
type Item struct {
	Ecosystem, Name, Version, Purl string
}

// Inventory is a project's latest scan: what its lockfile or SBOM lists.
type Inventory struct {
	Project       string
	User, TokenID string
	ScannedAt     time.Time
	Items         []Item
}

// MaxProject bounds a project's name; MaxItems the versions an inventory
// keeps.
const (
	MaxProject = 200
	MaxItems   = 100_000
)

// CheckProject validates a project's name: at most MaxProject
// characters, no control characters.
func CheckProject(name string) error {
	if strings.TrimSpace(name) == "" || len([]rune(name)) > MaxProject || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return core.Invalid("project", "must be a name of 1 to %d characters without control characters", MaxProject)
	}
	return nil
}

// Found asks the store to record the exposures of some versions of one
// package under a report (Store.RecordExposures).
type Found struct {
	ThreatID        string
	Ecosystem, Name string
	Versions        []string
	At              time.Time
	// Project, when set, limits the inventories to that project's (a
	// scan that found the version already refused).
	Project string
	// Since, when set, limits the rows to those last served, and the
	// inventories to those scanned, since then (the detector's second
	// look, for what was written after its first).
	Since time.Time
}

// Query selects exposures (Store.ListExposures), newest first.
type Query struct {
	ThreatID string
	Since    time.Time
	// User, when set, is the caller's: only their tokens' rows and their
	// projects.
	User string
	// After is the ID of the last exposure of the page before (0: the
	// first page).
	After int64
	Limit int
}

// MaxPage bounds a page of exposures; MaxBatch the packages one
// ExposedPackages call asks about.
const (
	MaxPage  = 1000
	MaxBatch = 500
)

// Store keeps inventories and exposures.
type Store interface {
	// SaveInventory replaces a project's inventory.
	SaveInventory(ctx context.Context, inv Inventory) error
	// ExposedVersions lists, in order, the versions of a package that a
	// ledger row or an inventory names: those after p.After, at most
	// p.Limit (1..MaxItems, else ErrInvalid).
	ExposedVersions(ctx context.Context, p Package) ([]string, error)
	// ExposedPackages returns those of ps (at most MaxBatch) whose
	// name a ledger row or an inventory has (only Ecosystem and Name
	// are read).
	ExposedPackages(ctx context.Context, ps []Package) ([]Package, error)
	// RecordExposures records the exposures of f's versions, each once
	// per report and row, and returns how many are new.
	RecordExposures(ctx context.Context, f Found) (int64, error)
	// ListExposures returns a page of exposures, newest first; ErrInvalid
	// for a limit outside 1..MaxPage.
	ListExposures(ctx context.Context, q Query) ([]Exposure, error)
	// ExposureCount counts a report's exposures.
	ExposureCount(ctx context.Context, threatID string) (int64, error)
	// QueueExposureEvent queues a report's exposure.found event for the
	// subscriptions that name it, once per report: false when the report
	// had one already.
	QueueExposureEvent(ctx context.Context, ev Event) (bool, error)
	// ExposureMark is the time of the latest change the detector of any
	// daemon has looked at, every change before it looked at too (zero:
	// none yet); MoveExposureMark moves it forward, never back.
	ExposureMark(ctx context.Context) (time.Time, error)
	MoveExposureMark(ctx context.Context, at time.Time) error
}

// Package names a package as the firewall does: its ecosystem's firewall
// name (cargo for crates.io) and its folded name (firewall.FoldName); and
// a page of its versions: those after After (the page before's last), at
// most Limit.
type Package struct {
	Ecosystem, Name string
	After           string
	Limit           int
}

// String names an exposure for logs.
func (e Exposure) String() string {
	who := e.User
	if e.Kind == KindInventory {
		who = "project " + e.Project
	}
	return fmt.Sprintf("%s %s (%s)", e.Purl, who, e.Kind)
}

// ItemOf names a scanned package version as inventories keep it (the
// firewall's name of its registry, its name folded), with its purl.
func ItemOf(registry, name, version, purl string) Item {
	eco := firewall.FirewallName(registry)
	if purl == "" {
		purl = core.VersionPurl(registry, name, version)
	}
	return Item{Ecosystem: eco, Name: firewall.FoldName(eco, name), Version: version, Purl: purl}
}

// JSON is an exposure as the API, the webhooks and syslog show it.
type JSON struct {
	ExposureID string    `json:"exposure_id"`
	ThreatID   string    `json:"threat_id"`
	Purl       string    `json:"purl"`
	Kind       string    `json:"kind"`
	User       string    `json:"user"`
	TokenID    string    `json:"token_id"`
	ClientIP   string    `json:"client_ip"`
	Project    string    `json:"project"`
	First      time.Time `json:"first"`
	Last       time.Time `json:"last"`
	Count      int64     `json:"count"`
	FoundAt    time.Time `json:"found_at"`
}

// Show is e as the API shows it.
func Show(e Exposure) JSON {
	return JSON{ExposureID: strconv.FormatInt(e.ID, 10), ThreatID: e.ThreatID, Purl: e.Purl, Kind: e.Kind, User: e.User, TokenID: e.TokenID,
		ClientIP: e.ClientIP, Project: e.Project, First: e.First, Last: e.Last, Count: e.Count, FoundAt: e.FoundAt}
}

// EventBody is the exposure.found event's JSON: {"type", "timestamp",
// "data": {"threat_id", "total", "exposures"}}.
func EventBody(ev Event, es []Exposure) ([]byte, error) {
	shown := make([]JSON, len(es))
	for i, e := range es {
		shown[i] = Show(e)
	}
	return json.Marshal(struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Data      any    `json:"data"`
	}{EventFound, ev.At.UTC().Format(time.RFC3339Nano), struct {
		ThreatID  string `json:"threat_id"`
		Total     int64  `json:"total"`
		Exposures []JSON `json:"exposures"`
	}{ev.ThreatID, ev.Total, shown}})
}
