// Package misp renders the verified reports as a MISP feed (docs/misp.md):
// the layout MISP's "Add feed" → "MISP Feed" reads, a manifest.json, one
// event file per day of verification ({uuid}.json) and hashes.csv.
//
// Package reports (and container images) become malicious-package-report
// objects (MISP/misp-objects, template version 4); URL, repository, domain,
// IP and wallet reports become attributes of their MISP types. A withdrawn
// report keeps its attribute or object, with to_ids false and a "withdrawn"
// tag; an event's timestamp is the latest change of its reports, so MISP
// fetches an event again exactly when one of them changed.
package misp

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
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

// ManifestEntry is an event's entry of manifest.json.
type ManifestEntry struct {
	Orgc          Org    `json:"Orgc"`
	Tag           []Tag  `json:"Tag"`
	Info          string `json:"info"`
	Date          string `json:"date"`
	Analysis      int    `json:"analysis"`
	ThreatLevelID int    `json:"threat_level_id"`
	Timestamp     int64  `json:"timestamp"`
}

// Feed renders events of one threatd service.
type Feed struct {
	Org Org
	// Site is the web site's address: a report's page is Site/threats/<id>.
	Site string
}

// NewFeed returns the feed of the service whose MISP organisation is named
// name; secret (a service secret) makes its organisation and event uuids
// its own and stable.
func NewFeed(name, secret, site string) Feed {
	return Feed{Org: Org{Name: name, UUID: uuid.NewSHA1(uuid.NameSpaceOID, []byte("threatd-misp-org:"+secret)).String()}, Site: strings.TrimSuffix(site, "/")}
}

// EventUUID is the uuid of the event of one day (UTC): the organisation's
// part, then the date in the last group (…-0000YYYYMMDD), so that the
// daemon finds the day of a requested event without a table.
func (f Feed) EventUUID(day time.Time) string {
	h := sha1.Sum([]byte("threatd-misp-events:" + f.Org.UUID))
	var b [16]byte
	copy(b[:10], h[:10])
	b[6] = 0x80 | b[6]&0x0f // version 8: custom
	b[8] = 0x80 | b[8]&0x3f // RFC 9562 variant
	s := hex.EncodeToString(b[:10])
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-0000" + day.UTC().Format("20060102")
}

// DayOf returns the day of an event uuid of this feed.
func (f Feed) DayOf(id string) (time.Time, bool) {
	id = strings.ToLower(id)
	probe := f.EventUUID(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	if len(id) != len(probe) || id[:len(probe)-8] != probe[:len(probe)-8] {
		return time.Time{}, false
	}
	day, err := time.Parse("20060102", id[len(probe)-8:])
	if err != nil || day.Format("20060102") != id[len(probe)-8:] {
		return time.Time{}, false
	}
	return day, true
}

// Day is the day (UTC) a report belongs to: when it was verified.
func Day(t core.Threat) time.Time {
	if t.VerifiedAt == nil {
		return time.Time{}
	}
	v := t.VerifiedAt.UTC()
	return time.Date(v.Year(), v.Month(), v.Day(), 0, 0, 0, 0, time.UTC)
}

// NewEvent starts the event of a day.
func (f Feed) NewEvent(day time.Time) *Event {
	return &Event{
		UUID: f.EventUUID(day), Date: day.UTC().Format("2006-01-02"),
		Info:      "threatd: malicious packages and infrastructure verified on " + day.UTC().Format("2006-01-02"),
		Published: true, Analysis: "2", ThreatLevelID: "1", Orgc: f.Org,
		Tag: []Tag{{Name: "tlp:clear"}}, Attribute: []Attribute{}, Object: []Object{},
	}
}

// Add adds a report (verified, or withdrawn after it was verified).
func (f Feed) Add(e *Event, t core.Threat) {
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
	}
	canon, _ := core.CanonicalIdentifier(t.ReportType, t.Registry, t.ResourceIdentifier)
	if canon == "" {
		canon = t.ResourceIdentifier
	}
	attr := func(typ, value string) {
		e.Attribute = append(e.Attribute, Attribute{UUID: id(typ, value), Type: typ, Category: categories[typ], Value: value,
			ToIDs: !withdrawn, Timestamp: ts, Comment: comment, Tag: tags})
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
		f.addObject(e, t, withdrawn, ts, comment, page, id, tags)
	}
}

func (f Feed) addObject(e *Event, t core.Threat, withdrawn bool, ts, comment, page string, id func(...string) string, tags []Tag) {
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

// Manifest is the event's manifest.json entry.
func (e *Event) Manifest() ManifestEntry {
	a, _ := strconv.Atoi(e.Analysis)
	l, _ := strconv.Atoi(e.ThreatLevelID)
	return ManifestEntry{Orgc: e.Orgc, Tag: e.Tag, Info: e.Info, Date: e.Date, Analysis: a, ThreatLevelID: l, Timestamp: e.stamp}
}

// Reports is how many reports the event holds.
func (e *Event) Reports() int { return e.reports }

// Hashes are the hashes.csv lines of the event: the MD5 of each attribute
// value (objects' included) and the event's uuid.
func (e *Event) Hashes() []string {
	var out []string
	line := func(v string) {
		sum := md5.Sum([]byte(v))
		out = append(out, hex.EncodeToString(sum[:])+","+e.UUID)
	}
	for _, a := range e.Attribute {
		line(a.Value)
	}
	for _, o := range e.Object {
		for _, a := range o.Attribute {
			line(a.Value)
		}
	}
	return out
}

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

// ErrNoEvent is returned for an event uuid that is not one of this feed's.
var ErrNoEvent = fmt.Errorf("%w: no such MISP event", core.ErrNotFound)

// pageSize is the reports read at once.
const pageSize = 1000

// Walk calls fn with the event of each day that has reports verified in
// [from, to) (zero = unbounded), in date order: the reports are read page by
// page in verification order, so memory holds one day's event at a time.
func (f Feed) Walk(ctx context.Context, store core.PublishedStore, from, to time.Time, fn func(*Event) error) error {
	q := core.ThreatQuery{VerifiedFrom: from, VerifiedTo: to, Withdrawn: true, Limit: pageSize}
	var cur *Event
	var curDay time.Time
	for {
		page, err := store.QueryThreats(ctx, q)
		if err != nil {
			return err
		}
		for _, t := range page {
			day := Day(t)
			if cur == nil || !day.Equal(curDay) {
				if cur != nil {
					if err := fn(cur); err != nil {
						return err
					}
				}
				cur, curDay = f.NewEvent(day), day
			}
			f.Add(cur, t)
		}
		if len(page) < pageSize {
			break
		}
		last := page[len(page)-1]
		q.AfterVerifiedAt, q.AfterID = *last.VerifiedAt, last.ID
	}
	if cur != nil {
		return fn(cur)
	}
	return nil
}

// EventOf returns the event with this uuid; ErrNoEvent when the uuid is
// not this feed's or its day has no reports.
func (f Feed) EventOf(ctx context.Context, store core.PublishedStore, id string) (*Event, error) {
	day, ok := f.DayOf(id)
	if !ok {
		return nil, ErrNoEvent
	}
	var out *Event
	err := f.Walk(ctx, store, day, day.AddDate(0, 0, 1), func(e *Event) error { out = e; return nil })
	if err == nil && out == nil {
		err = ErrNoEvent
	}
	return out, err
}
