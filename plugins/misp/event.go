// Package misp is the MISP format, for the MISP exporter plugin
// (cmd/threatd-exporter-misp) only: a day's reports rendered as the event
// of a MISP feed (docs/misp.md). Package reports (and container images)
// become malicious-package-report objects (MISP/misp-objects, template
// version 4); URL, repository, domain, IP and wallet reports become
// attributes of their MISP types. A withdrawn report keeps its attribute
// or object, with to_ids false and a "withdrawn" tag; an event's
// timestamp is the latest change of its reports, so MISP fetches an event
// again exactly when one of them changed. The daemon (core/misp) chooses
// the days, names the events and keeps the manifest and hashes.csv.
package misp

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// The malicious-package-report object template this feed follows.
const (
	TemplateName    = "malicious-package-report"
	TemplateUUID    = "2f8a8711-6ef8-4a9d-89de-f547670573cb"
	TemplateVersion = "4"
	templateDesc    = "Object describing a malicious open source package report from an OSV-style feed such as OpenSSF malicious-packages."
)

// TagWithdrawn marks the attributes of a withdrawn report.
const TagWithdrawn = "withdrawn"

// CampaignTag is the machine tag of a campaign: threatd:campaign="name".
func CampaignTag(name string) string {
	return `threatd:campaign="` + strings.ReplaceAll(name, `"`, `'`) + `"`
}

// Org is the organisation that creates the events (Orgc).
type Org struct {
	Name string `json:"name"`
	UUID string `json:"uuid"`
}

// Tag is a MISP tag.
type Tag struct {
	Name   string `json:"name"`
	Colour string `json:"colour,omitempty"`
}

// Attribute is a MISP attribute, in an event or an object.
type Attribute struct {
	UUID               string `json:"uuid"`
	Type               string `json:"type"`
	Category           string `json:"category"`
	Value              string `json:"value"`
	ToIDs              bool   `json:"to_ids"`
	Timestamp          string `json:"timestamp"`
	Comment            string `json:"comment,omitempty"`
	DisableCorrelation bool   `json:"disable_correlation"`
	ObjectRelation     string `json:"object_relation,omitempty"`
	Tag                []Tag  `json:"Tag,omitempty"`
	// Sighting is on the attribute that names the report's subject.
	Sighting []Sighting `json:"Sighting,omitempty"`
}

// Sighting is a MISP sighting of an attribute. MISP sightings have no
// count: the feed gives one per type the report has, dated by the latest
// (seen) or by the last change of the counts, with its count in source.
type Sighting struct {
	UUID         string `json:"uuid"`
	Type         string `json:"type"` // "0" seen, "1" false positive, "2" expired
	DateSighting string `json:"date_sighting"`
	Source       string `json:"source"`
	Organisation Org    `json:"Organisation"`
}

// Object is a MISP object.
type Object struct {
	Name            string      `json:"name"`
	MetaCategory    string      `json:"meta-category"`
	Description     string      `json:"description"`
	TemplateUUID    string      `json:"template_uuid"`
	TemplateVersion string      `json:"template_version"`
	UUID            string      `json:"uuid"`
	Timestamp       string      `json:"timestamp"`
	Comment         string      `json:"comment,omitempty"`
	Attribute       []Attribute `json:"Attribute"`
}

// Event is a MISP event as a feed file holds it.
type Event struct {
	UUID             string      `json:"uuid"`
	Info             string      `json:"info"`
	Date             string      `json:"date"`
	Timestamp        string      `json:"timestamp"`
	PublishTimestamp string      `json:"publish_timestamp"`
	Published        bool        `json:"published"`
	Analysis         string      `json:"analysis"`
	ThreatLevelID    string      `json:"threat_level_id"`
	Orgc             Org         `json:"Orgc"`
	Tag              []Tag       `json:"Tag"`
	Attribute        []Attribute `json:"Attribute"`
	Object           []Object    `json:"Object"`

	reports int
	stamp   int64
}

// File is the content of {uuid}.json.
type File struct {
	Event Event `json:"Event"`
}

// Feed is what names a feed's events: its organisation and the web site
// a report's page is on (Site/threats/<id>).
type Feed struct {
	Org  Org
	Site string
}

// NewEvent starts the event of a day, called id (the daemon names it).
func (f Feed) NewEvent(day time.Time, id string) *Event {
	return &Event{
		UUID: id, Date: day.UTC().Format("2006-01-02"),
		Info:      "threatd: malicious packages and infrastructure verified on " + day.UTC().Format("2006-01-02"),
		Published: true, Analysis: "2", ThreatLevelID: "1", Orgc: f.Org,
		Tag: []Tag{{Name: "tlp:clear"}}, Attribute: []Attribute{}, Object: []Object{},
	}
}

// sightings are a report's counts as MISP sightings.
func (f Feed) sightings(c core.Community, id func(...string) string) []Sighting {
	s := c.Sightings
	var out []Sighting
	for _, k := range []struct {
		typ, name string
		n         int64
		at        time.Time
	}{{"0", "seen", s.Seen, s.LastSeen}, {"1", "false positive", s.FalsePositive, s.UpdatedAt}, {"2", "expired", s.Expired, s.UpdatedAt}} {
		if k.n == 0 {
			continue
		}
		at := k.at
		if at.IsZero() {
			at = s.UpdatedAt
		}
		out = append(out, Sighting{UUID: id("sighting", k.typ), Type: k.typ, DateSighting: strconv.FormatInt(at.Unix(), 10),
			Source: fmt.Sprintf("threatd: %s %d times", k.name, k.n), Organisation: f.Org})
	}
	return out
}

// Add adds a report (verified, or withdrawn after it was verified) with
// what the community says of it (its sightings).
func (f Feed) Add(e *Event, t core.Threat, c core.Community) {
	withdrawn := t.Status != core.StatusVerified
	changed := t.UpdatedAt
	if t.VerifiedAt != nil && t.VerifiedAt.After(changed) {
		changed = *t.VerifiedAt
	}
	stamp := changed.Unix()
	e.stamp = max(e.stamp, stamp)
	e.Timestamp = strconv.FormatInt(e.stamp, 10)
	e.PublishTimestamp = e.Timestamp
	e.reports++
	ts := strconv.FormatInt(stamp, 10)
	page := ""
	if f.Site != "" {
		page = f.Site + "/threats/" + t.ID
	}
	comment := oneLine(t.Details.ThreatDescription, 200)
	if page != "" {
		comment += " — " + page
	}
	if withdrawn {
		comment = "Withdrawn. " + comment
	}
	id := func(parts ...string) string {
		return uuid.NewSHA1(uuid.MustParse(e.UUID), []byte(t.ID+"\x00"+strings.Join(parts, "\x00"))).String()
	}
	var tags []Tag
	if withdrawn {
		tags = []Tag{{Name: TagWithdrawn}}
	} else {
		// A report's campaigns tag its attributes and its day's event.
		for _, camp := range c.Campaigns {
			tag := Tag{Name: CampaignTag(camp.Name)}
			tags = append(tags, tag)
			if !slices.Contains(e.Tag, tag) {
				e.Tag = append(e.Tag, tag)
			}
		}
	}
	canon, _ := core.CanonicalIdentifier(t.ReportType, t.Registry, t.ResourceIdentifier)
	if canon == "" {
		canon = t.ResourceIdentifier
	}
	var sightings []Sighting
	if !withdrawn {
		sightings = f.sightings(c, id)
	}
	attr := func(typ, value string) {
		e.Attribute = append(e.Attribute, Attribute{UUID: id(typ, value), Type: typ, Category: categories[typ], Value: value,
			ToIDs: !withdrawn, Timestamp: ts, Comment: comment, Tag: tags, Sighting: sightings})
	}
	switch t.ReportType {
	case core.TypeURL:
		attr("url", canon)
	case core.TypeRepository:
		attr("url", "https://"+canon)
	case core.TypeDomain:
		attr("domain", canon)
	case core.TypeIP:
		attr("ip-dst", canon)
	case core.TypeWallet:
		attr(walletType(canon), canon)
	default: // packages and container images
		f.addObject(e, t, withdrawn, ts, comment, page, id, tags, sightings)
	}
}

func (f Feed) addObject(e *Event, t core.Threat, withdrawn bool, ts, comment, page string, id func(...string) string, tags []Tag, sightings []Sighting) {
	o := Object{Name: TemplateName, MetaCategory: "misc", Description: templateDesc, TemplateUUID: TemplateUUID,
		TemplateVersion: TemplateVersion, UUID: id("object"), Timestamp: ts, Comment: comment}
	add := func(relation, value string, toIDs bool) {
		if value == "" {
			return
		}
		tmpl := objectRelations[relation]
		// A relation given once keeps its uuid when its value changes (MISP
		// updates the attribute); one of several is known by its value.
		key := id("object", relation)
		if tmpl.multiple {
			key = id("object", relation, value)
		}
		o.Attribute = append(o.Attribute, Attribute{UUID: key, Type: tmpl.typ, Category: categories[tmpl.typ],
			Value: value, ToIDs: toIDs && !withdrawn, Timestamp: ts, DisableCorrelation: tmpl.noCorrelation, ObjectRelation: relation, Tag: tags})
	}
	add("report-id", core.OSVRecordOf(t), false)
	add("package-name", t.ResourceIdentifier, true)
	if len(o.Attribute) > 0 && len(sightings) > 0 {
		o.Attribute[len(o.Attribute)-1].Sighting = sightings
	}
	eco := core.OSVEcosystems[t.Registry]
	if eco == "" {
		eco = t.Registry
	}
	add("ecosystem", eco, false)
	if t.ReportType == core.TypePackage {
		add("package-purl", core.PackagePurl(t.Registry, t.ResourceIdentifier), true)
	}
	if t.AllVersions {
		add("affected-range", ">=0 (every version)", false)
	}
	for _, v := range core.AffectedVersions(t) {
		add("affected-version", v, false)
	}
	add("analysis", t.Details.ThreatDescription, false)
	for _, ind := range t.IOCs {
		if ind.Origin == ioc.OriginAsset || ind.Confidence < ioc.ConfidenceHigh {
			continue
		}
		switch ind.Type {
		case ioc.Domain:
			add("ioc-domain", ind.Value, true)
		case ioc.IP:
			add("ioc-ip", ind.Value, true)
		case ioc.URL:
			add("ioc-url", ind.Value, true)
		}
	}
	add("reference", page, false)
	if t.Source != "" {
		add("origin-source", t.Source, false)
	}
	modified := t.UpdatedAt
	if t.UpstreamModified != nil {
		modified = *t.UpstreamModified
	}
	add("report-modified", modified.UTC().Format("2006-01-02T15:04:05Z"), false)
	state := "active"
	if withdrawn {
		state = "withdrawn"
	}
	add("state", state, false)
	e.Object = append(e.Object, o)
}

// Reports is how many reports the event holds.
func (e *Event) Reports() int { return e.reports }

// categories are describeTypes.json's default categories of the types used.
var categories = map[string]string{
	"url": "Network activity", "domain": "Network activity", "ip-dst": "Network activity",
	"btc": "Financial fraud", "xmr": "Financial fraud", "text": "Other", "link": "External analysis", "datetime": "Other",
}

type relation struct {
	typ           string
	noCorrelation bool
	multiple      bool
}

// objectRelations are the template's attributes this feed writes.
var objectRelations = map[string]relation{
	"report-id": {"text", false, false}, "package-name": {"text", false, false}, "ecosystem": {"text", true, false},
	"package-purl": {"text", false, false}, "affected-range": {"text", true, true}, "affected-version": {"text", false, true},
	"analysis": {"text", true, false}, "ioc-domain": {"domain", false, true}, "ioc-ip": {"ip-dst", false, true},
	"ioc-url": {"url", false, true}, "reference": {"link", true, false}, "origin-source": {"text", true, true},
	"report-modified": {"datetime", true, false}, "state": {"text", true, false},
}

var (
	btcAddress = regexp.MustCompile(`^(?:[13][a-km-zA-HJ-NP-Z1-9]{25,34}|bc1[ac-hj-np-z02-9]{11,71})$`)
	xmrAddress = regexp.MustCompile(`^[48][1-9A-HJ-NP-Za-km-z]{94}(?:[1-9A-HJ-NP-Za-km-z]{11})?$`)
)

// walletType is the MISP type of a wallet address: btc or xmr by their
// formats; any other currency's address (Ethereum's 0x…) is text.
func walletType(a string) string {
	switch {
	case btcAddress.MatchString(a):
		return "btc"
	case xmrAddress.MatchString(a):
		return "xmr"
	}
	return "text"
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
