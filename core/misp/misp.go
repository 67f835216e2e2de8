// Package misp is the daemon's part of the MISP feed (docs/misp.md): the
// layout MISP's "Add feed" → "MISP Feed" reads, a manifest.json, one event
// file per day of verification ({uuid}.json) and hashes.csv. It chooses the
// days and their reports, names the events (uuids of the feed's own), and
// keeps the manifest and hashes.csv up to date; the MISP exporter plugin
// (threatd-exporter-misp, plugins/misp) renders each event, as every
// format is a plugin.
package misp

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Exporter is the exporter plugin that renders the events.
const Exporter = "misp"

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

// Feed names the events of one threatd service.
type Feed struct {
	Org Org
	// Site is the web site's address: a report's page is Site/threats/<id>.
	Site string
	// Community says what the community says of each report (nil:
	// nothing): its sightings and campaigns go in the events.
	Community core.Communities
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

// ErrNoEvent is returned for an event uuid that is not one of this feed's.
var ErrNoEvent = fmt.Errorf("%w: no such MISP event", core.ErrNotFound)

// pageSize is the reports read at once.
const pageSize = 1000

// Event is one day's event as the exporter rendered it: the feed file
// ({"Event": …}) and what the daemon reads of it.
type Event struct {
	UUID    string
	Day     time.Time
	File    []byte
	Reports int
}

// head is what the daemon reads of an event file: the manifest entry's
// fields and the attribute values hashes.csv lists.
type head struct {
	Event struct {
		UUID          string `json:"uuid"`
		Info          string `json:"info"`
		Date          string `json:"date"`
		Timestamp     string `json:"timestamp"`
		Analysis      string `json:"analysis"`
		ThreatLevelID string `json:"threat_level_id"`
		Orgc          Org    `json:"Orgc"`
		Tag           []Tag  `json:"Tag"`
		Attribute     []struct {
			Value string `json:"value"`
		} `json:"Attribute"`
		Object []struct {
			Attribute []struct {
				Value string `json:"value"`
			} `json:"Attribute"`
		} `json:"Object"`
	} `json:"Event"`
}

// Manifest is the event's manifest.json entry.
func (e *Event) Manifest() (ManifestEntry, error) {
	var h head
	if err := json.Unmarshal(e.File, &h); err != nil {
		return ManifestEntry{}, fmt.Errorf("misp: the exporter's event %s: %w", e.UUID, err)
	}
	a, _ := strconv.Atoi(h.Event.Analysis)
	l, _ := strconv.Atoi(h.Event.ThreatLevelID)
	ts, _ := strconv.ParseInt(h.Event.Timestamp, 10, 64)
	return ManifestEntry{Orgc: h.Event.Orgc, Tag: h.Event.Tag, Info: h.Event.Info, Date: h.Event.Date, Analysis: a, ThreatLevelID: l, Timestamp: ts}, nil
}

// Hashes are the hashes.csv lines of the event: the MD5 of each attribute
// value (objects' included) and the event's uuid.
func (e *Event) Hashes() ([]string, error) {
	var h head
	if err := json.Unmarshal(e.File, &h); err != nil {
		return nil, fmt.Errorf("misp: the exporter's event %s: %w", e.UUID, err)
	}
	var out []string
	line := func(v string) {
		sum := md5.Sum([]byte(v))
		out = append(out, hex.EncodeToString(sum[:])+","+e.UUID)
	}
	for _, a := range h.Event.Attribute {
		line(a.Value)
	}
	for _, o := range h.Event.Object {
		for _, a := range o.Attribute {
			line(a.Value)
		}
	}
	return out, nil
}

// render asks the exporter for the event of day from its reports.
func (f Feed) render(ctx context.Context, x core.Exporters, day time.Time, reports []core.Threat) (*Event, error) {
	id := f.EventUUID(day)
	records := make([]core.ExportRecord, len(reports))
	for i, t := range reports {
		records[i] = core.NewExportRecord(t, core.CommunityOf(f.Community, t))
	}
	req := core.ExportRequest{Endpoint: "/misp/" + id + ".json", Service: "threatd", Records: records,
		Query: map[string]string{"date": day.Format("2006-01-02"), "event_uuid": id, "org_name": f.Org.Name, "org_uuid": f.Org.UUID, "site": f.Site}}
	var buf document
	if err := x.Export(ctx, Exporter, req, &buf); err != nil {
		return nil, err
	}
	return &Event{UUID: id, Day: day, File: buf.Bytes(), Reports: len(reports)}, nil
}

// document collects an exporter's document.
type document struct{ bytes.Buffer }

func (d *document) Start(string) error { return nil }

// Walk calls fn with the event of each day that has reports verified in
// [from, to) (zero = unbounded), in date order: the reports are read page by
// page in verification order, and each day's go to the exporter, so memory
// holds one day's reports and event at a time.
func (f Feed) Walk(ctx context.Context, store core.PublishedStore, x core.Exporters, from, to time.Time, fn func(*Event) error) error {
	q := core.ThreatQuery{VerifiedFrom: from, VerifiedTo: to, Withdrawn: true, Limit: pageSize}
	var cur []core.Threat
	var curDay time.Time
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		e, err := f.render(ctx, x, curDay, cur)
		if err != nil {
			return err
		}
		cur = nil
		return fn(e)
	}
	for {
		page, err := store.QueryThreats(ctx, q)
		if err != nil {
			return err
		}
		for _, t := range page {
			if day := Day(t); len(cur) == 0 || !day.Equal(curDay) {
				if err := flush(); err != nil {
					return err
				}
				curDay = day
			}
			cur = append(cur, t)
		}
		if len(page) < pageSize {
			break
		}
		last := page[len(page)-1]
		q.AfterVerifiedAt, q.AfterID = *last.VerifiedAt, last.ID
	}
	return flush()
}

// EventOf returns the event with this uuid; ErrNoEvent when the uuid is
// not this feed's or its day has no reports.
func (f Feed) EventOf(ctx context.Context, store core.PublishedStore, x core.Exporters, id string) (*Event, error) {
	day, ok := f.DayOf(id)
	if !ok {
		return nil, ErrNoEvent
	}
	var out *Event
	err := f.Walk(ctx, store, x, day, day.AddDate(0, 0, 1), func(e *Event) error { out = e; return nil })
	if err == nil && out == nil {
		err = ErrNoEvent
	}
	return out, err
}
