// Package record is a threat report as every client reads it (spec §2.4
// and docs/api/records.md): the details of check-malicious, the elements
// of every list and feed, a webhook's data, a scan's details, the web's
// public JSON, the firewall's refusals. The API, the web site, the index
// spill, webhook deliveries and threatd scan all import it; one rule says
// who sees the contact e-mail (core.ContactVisibleTo).
package record

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/threatd/threatd/core"
)

// Record is a threat record: every field present, absent values null,
// arrays never null; existing OpenSourceMalware clients read these names.
// It is its Base, then what the community says of the report (community:
// sightings, confidence, dispute, campaigns), which changes without the
// report changing: the index keeps the Base's JSON and Splice adds the
// rest as a check is answered.
type Record struct {
	Base
	community
}

// Base is a record without its community signals: its identity (head),
// every field of core.Details under its JSON name (details, generated from
// core/fields.txt), then its review state (tail). encoding/json writes
// embedded structs' fields in place, in that order.
type Base struct {
	head
	details
	tail
}

// community are a record's community signals (docs/api/records.md,
// "Community signals"), last.
type community struct {
	Sightings  sightings  `json:"sightings"`
	Confidence int        `json:"confidence"`
	Disputed   bool       `json:"disputed"`
	Campaigns  []campaign `json:"campaigns"`
}

type sightings struct {
	Seen          int64      `json:"seen"`
	FalsePositive int64      `json:"false_positive"`
	Expired       int64      `json:"expired"`
	LastSeen      *time.Time `json:"last_seen"`
}

type campaign struct {
	ID   string `json:"campaign_id"`
	Name string `json:"name"`
}

func newCommunity(c core.Community) community {
	out := community{Sightings: sightings{Seen: c.Sightings.Seen, FalsePositive: c.Sightings.FalsePositive, Expired: c.Sightings.Expired},
		Confidence: c.Confidence, Disputed: c.Disputed, Campaigns: make([]campaign, len(c.Campaigns))}
	if !c.Sightings.LastSeen.IsZero() {
		at := c.Sightings.LastSeen.UTC()
		out.Sightings.LastSeen = &at
	}
	for i, ref := range c.Campaigns {
		out.Campaigns[i] = campaign{ID: ref.ID, Name: ref.Name}
	}
	return out
}

type head struct {
	ID                 string  `json:"id"`
	Status             string  `json:"status"`
	ReportType         string  `json:"report_type"`
	ResourceIdentifier string  `json:"resource_identifier"`
	Registry           *string `json:"registry"`
	// Description repeats threat_description under the name older clients read.
	Description string `json:"description"`
}

type tail struct {
	CreatedAt  time.Time  `json:"created_at"`
	VerifiedAt *time.Time `json:"verified_at"`
	VerifiedBy *string    `json:"verified_by"`
	Revision   int        `json:"revision"`
}

// Of is t's record as viewer may see it, with what the community says of
// it (c): the contact e-mail only for its submitter and for reviewers
// (core.Threat.VisibleTo).
func Of(t core.Threat, viewer core.Principal, c core.Community) Record {
	return Record{Base: BaseOf(t, viewer), community: newCommunity(c)}
}

// BaseOf is t's record without its community signals.
func BaseOf(t core.Threat, viewer core.Principal) Base {
	t = t.VisibleTo(viewer)
	return Base{
		head: head{
			ID: t.ID, Status: string(t.Status), ReportType: string(t.ReportType), ResourceIdentifier: t.ResourceIdentifier,
			Registry: Nullable(t.Registry), Description: t.Details.ThreatDescription,
		},
		details: newDetails(t.Details),
		tail:    tail{CreatedAt: t.CreatedAt, VerifiedAt: t.VerifiedAt, VerifiedBy: Nullable(t.VerifiedBy), Revision: t.Revision},
	}
}

// Public is t's record as anybody sees it (no contact e-mail): webhook
// deliveries, the web's public JSON, threatd scan without a server.
func Public(t core.Threat, c core.Community) Record { return Of(t, core.Principal{}, c) }

// PublicJSON is the JSON of the public record's Base, as check-malicious
// writes it before Splice: what the index spill keeps for each verified
// report.
// It writes the bytes json.Marshal writes, without its reflection or the
// Base it would build (the spill's fill renders every verified report at
// start-up: encoding/json was a sixth of the daemon's CPU there); a time
// json.Marshal refuses goes to json.Marshal, for its error.
func PublicJSON(t core.Threat) ([]byte, error) {
	return AppendPublicJSON(make([]byte, 0, 512+len(t.Details.ThreatDescription)+len(t.Details.PayloadDescription)), t)
}

// AppendPublicJSON appends PublicJSON(t) to b: the spill's fill writes
// each entry straight into the buffer it writes to the file (a record of
// its own, then copied, was two thirds of the bytes the daemon allocated
// during the fill). On an error b comes back as it was.
func AppendPublicJSON(b []byte, t core.Threat) ([]byte, error) {
	t = t.VisibleTo(core.Principal{})
	n := len(b)
	if out, ok := appendBase(b, &t); ok {
		return out, nil
	}
	j, err := json.Marshal(BaseOf(t, core.Principal{}))
	if err != nil {
		return b[:n], err
	}
	return append(b[:n], j...), nil
}

// appendBase writes BaseOf(*t) as json.Marshal does, t as the reader may
// see it: false when a time cannot be written.
func appendBase(b []byte, t *core.Threat) ([]byte, bool) {
	b = append(b, `{"id":`...)
	b = core.AppendJSONString(b, t.ID)
	b = append(b, `,"status":`...)
	b = core.AppendJSONString(b, string(t.Status))
	b = append(b, `,"report_type":`...)
	b = core.AppendJSONString(b, string(t.ReportType))
	b = append(b, `,"resource_identifier":`...)
	b = core.AppendJSONString(b, t.ResourceIdentifier)
	b = append(b, `,"registry":`...)
	b = appendText(b, t.Registry)
	b = append(b, `,"description":`...)
	b = core.AppendJSONString(b, t.Details.ThreatDescription)
	b, ok := appendDetails(b, &t.Details)
	if !ok {
		return b, false
	}
	b = append(b, `,"created_at":`...)
	if b, ok = appendTime(b, &t.CreatedAt); !ok {
		return b, false
	}
	b = append(b, `,"verified_at":`...)
	if b, ok = appendTime(b, t.VerifiedAt); !ok {
		return b, false
	}
	b = append(b, `,"verified_by":`...)
	b = appendText(b, t.VerifiedBy)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, int64(t.Revision), 10)
	return append(b, '}'), true
}

// The values of a record's members as json.Marshal writes them, by kind
// (appendDetails, generated, calls them).

// appendText writes text as Nullable makes it: null when empty.
func appendText(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return core.AppendJSONString(b, s)
}

// appendList writes list as nonNil makes it: [] when nil.
func appendList(b []byte, list []string) []byte { return core.AppendJSONStrings(b, list) }

// appendTime writes t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds when there are any); false where it fails (a year outside
// 0–9999, an offset of part of a minute).
func appendTime(b []byte, t *time.Time) ([]byte, bool) {
	if t == nil {
		return append(b, "null"...), true
	}
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, false
	}
	return append(b, '"'), true
}

func appendCount(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *n, 10)
}

// Splice is the record whose Base's JSON is base (PublicJSON), with c: the
// bytes json.Marshal writes for the whole Record, without its reflection
// (a check answer is written for every request of the hot path).
func Splice(base []byte, c core.Community) []byte {
	return AppendSplice(make([]byte, 0, len(base)+160+len(c.Campaigns)*80), base, c)
}

// AppendSplice appends Splice(base, c) to b: a check answer writes the
// record straight into the answer's buffer.
func AppendSplice(b, base []byte, c core.Community) []byte {
	if len(base) < 2 || base[len(base)-1] != '}' {
		return append(b, base...)
	}
	b = append(b, base[:len(base)-1]...)
	if len(base) > 2 {
		b = append(b, ',')
	}
	return appendCommunity(b, c)
}

// appendCommunity writes c's fields and the closing brace, as json.Marshal
// writes community.
func appendCommunity(b []byte, c core.Community) []byte {
	b = append(b, `"sightings":{"seen":`...)
	b = strconv.AppendInt(b, c.Sightings.Seen, 10)
	b = append(b, `,"false_positive":`...)
	b = strconv.AppendInt(b, c.Sightings.FalsePositive, 10)
	b = append(b, `,"expired":`...)
	b = strconv.AppendInt(b, c.Sightings.Expired, 10)
	b = append(b, `,"last_seen":`...)
	if c.Sightings.LastSeen.IsZero() {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = c.Sightings.LastSeen.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `},"confidence":`...)
	b = strconv.AppendInt(b, int64(c.Confidence), 10)
	b = append(b, `,"disputed":`...)
	b = strconv.AppendBool(b, c.Disputed)
	b = append(b, `,"campaigns":[`...)
	for i, ref := range c.Campaigns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"campaign_id":`...)
		b = core.AppendJSONString(b, ref.ID)
		b = append(b, `,"name":`...)
		b = core.AppendJSONString(b, ref.Name)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// Nullable is a text as a record shows it: null when empty.
func Nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nonNil is a list as a record shows it: [] when empty.
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
