package stix

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/threatd/threatd/core"
)

// The objects of a record are written straight to JSON: each object's
// members in the order encoding/json gives a map's keys (sorted by their
// bytes), each value escaped as encoding/json escapes it. Building every
// object as a map and sorting its keys to render it was half the STIX
// exporter's CPU in a TAXII pull (docs/performance.md). The mapping is
// held, byte for byte on every real report, to the same objects built as
// maps and rendered by encoding/json (TestWriterIsTheMapping).

// writer appends JSON objects one after another to b, a comma between
// them, noting where each starts (a bundle's list of objects).
type writer struct {
	b []byte
	// starts, when track is set, is where each object begins.
	starts []int
	track  bool
	// more: an object is already in the list, so the next follows a
	// comma; first: the object being written has no member yet.
	more, first bool
	// seen, when set, holds the campaigns already written: a campaign's
	// object comes once in a bundle, however many of its reports the
	// bundle holds.
	seen map[string]bool
}

// next starts an element of the list, written by the caller.
func (w *writer) next() {
	if w.more {
		w.b = append(w.b, ',')
	}
	w.more = true
	if w.track {
		w.starts = append(w.starts, len(w.b))
	}
}

// object starts an object in the list; its members follow in key order.
func (w *writer) object() {
	w.next()
	w.b = append(w.b, '{')
	w.first = true
}

func (w *writer) end() { w.b = append(w.b, '}') }

// key writes a member's name: a constant of plain ASCII that needs no
// escaping.
func (w *writer) key(k string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *writer) str(k, v string) {
	w.key(k)
	w.b = core.AppendJSONString(w.b, v)
}

func (w *writer) int(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *writer) bool(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

func (w *writer) strs(k string, v []string) {
	w.key(k)
	w.b = core.AppendJSONStrings(w.b, v)
}

// tlpWhiteRefs is every object's object_marking_refs.
var tlpWhiteRefs = []string{TLPWhite}

// record writes the objects of r, in the order a record's objects come:
// the malware; unless the report is withdrawn, its sighting and each of
// its campaigns with the malware's attributed-to relationship; then an
// indicator and its indicates relationship per indicator of compromise.
// identity is the service's identity's id.
func (w *writer) record(r Record, identity string) {
	t := r.Threat
	created := t.CreatedAt
	modified := t.UpdatedAt
	if t.VerifiedAt != nil && t.VerifiedAt.After(modified) {
		modified = *t.VerifiedAt
	}
	if modified.Before(created) {
		modified = created
	}
	validFrom := created
	if t.VerifiedAt != nil {
		validFrom = *t.VerifiedAt
	}
	name := t.ResourceIdentifier
	if t.Registry != "" {
		name = t.ResourceIdentifier + " (" + t.Registry + ")"
	}
	// A withdrawn report's objects are published once more, revoked (STIX
	// 2.1 §3.6): a consumer that holds them must stop using them.
	revoked := t.Status == core.StatusRejected
	createdStamp, modifiedStamp, validStamp := stamp(created), stamp(modified), stamp(validFrom)
	ids := t.STIXIDs()
	malwareID := ids.Malware()
	c := r.Community

	// The malware. What the community says moves its modified, and gives
	// it a confidence, unless the report is withdrawn.
	malwareModified := modifiedStamp
	if !revoked && !c.ChangedAt.IsZero() {
		if changed := stamp(c.ChangedAt); changed > malwareModified {
			malwareModified = changed
		}
	}
	w.object()
	if !revoked {
		w.int("confidence", int64(max(0, min(100, c.Confidence))))
	}
	w.str("created", createdStamp)
	w.str("created_by_ref", identity)
	w.str("description", t.Details.ThreatDescription)
	w.externalRefs(t)
	if t.Details.FirstSeen != nil {
		w.str("first_seen", stamp(*t.Details.FirstSeen))
	}
	w.str("id", malwareID)
	w.bool("is_family", false)
	if len(t.Details.Tags) > 0 {
		w.strs("labels", t.Details.Tags)
	}
	if t.Details.LastSeen != nil && (t.Details.FirstSeen == nil || !t.Details.LastSeen.Before(*t.Details.FirstSeen)) {
		w.str("last_seen", stamp(*t.Details.LastSeen))
	}
	w.strs("malware_types", malwareTypes(t.Details.Tags))
	w.str("modified", malwareModified)
	w.str("name", name)
	w.strs("object_marking_refs", tlpWhiteRefs)
	if revoked {
		w.bool("revoked", true)
	}
	w.str("spec_version", "2.1")
	w.str("type", "malware")
	w.end()

	if !revoked {
		w.sighting(r, name, malwareID, createdStamp, identity)
		w.campaigns(r, malwareID, identity)
	}

	first := firstLine(t.Details.ThreatDescription)
	for _, x := range r.IOCs {
		pattern, ok := Pattern(x)
		if !ok {
			continue
		}
		indicatorID := ids.Indicator(x)
		w.object()
		if x.Confidence > 0 {
			w.int("confidence", int64(x.Confidence))
		}
		w.str("created", createdStamp)
		w.str("created_by_ref", identity)
		w.str("description", indicatorDescription(x, name, first))
		if x.Origin != "" {
			w.key("extensions")
			w.b = append(w.b, `{"`+OriginExtension+`":{"extension_type":"property-extension","origin":`...)
			w.b = append(core.AppendJSONString(w.b, x.Origin), '}', '}')
		}
		w.str("id", indicatorID)
		w.strs("indicator_types", []string{"malicious-activity"})
		if t.Details.SeverityLevel != "" {
			w.key("labels")
			w.b = append(w.b, '[')
			w.b = append(core.AppendJSONString(w.b, "severity:"+string(t.Details.SeverityLevel)), ']')
		}
		w.str("modified", modifiedStamp)
		w.str("name", x.Type+" "+x.Value+" of "+name)
		w.strs("object_marking_refs", tlpWhiteRefs)
		w.str("pattern", pattern)
		w.str("pattern_type", "stix")
		w.str("pattern_version", "2.1")
		if revoked {
			w.bool("revoked", true)
		}
		w.str("spec_version", "2.1")
		w.str("type", "indicator")
		w.str("valid_from", validStamp)
		w.end()

		w.object()
		w.str("created", createdStamp)
		w.str("created_by_ref", identity)
		w.str("id", ids.Relationship(x))
		w.str("modified", modifiedStamp)
		w.strs("object_marking_refs", tlpWhiteRefs)
		w.str("relationship_type", "indicates")
		if revoked {
			w.bool("revoked", true)
		}
		w.str("source_ref", indicatorID)
		w.str("spec_version", "2.1")
		w.str("target_ref", malwareID)
		w.str("type", "relationship")
		w.end()
	}
}

// externalRefs writes the malware's external references: its OSV
// advisory, each link of its evidence, and the report itself.
func (w *writer) externalRefs(t core.Threat) {
	w.key("external_references")
	w.b = append(w.b, '[')
	if t.Details.OSVAdvisoryURL != "" {
		w.b = append(w.b, `{"source_name":"osv","url":`...)
		w.b = append(core.AppendJSONString(w.b, t.Details.OSVAdvisoryURL), '}', ',')
	}
	for u := range strings.SplitSeq(t.Details.EvidenceReferences, "|") {
		if u = strings.TrimSpace(u); u != "" {
			w.b = append(w.b, `{"source_name":"evidence","url":`...)
			w.b = append(core.AppendJSONString(w.b, u), '}', ',')
		}
	}
	w.b = append(w.b, `{"external_id":`...)
	w.b = append(core.AppendJSONString(w.b, t.ID), `,"source_name":"threatd"}]`...)
}

// sighting writes, once anyone reported a sighting of the report, a
// sighting of the malware: its seen sightings as the count, and its
// false-positive and expired ones, with whether a dispute is open, in the
// SightingExtension. (STIX's opinion object would say "disagree", but the
// OASIS bundle schema does not list it, so a bundle carrying one fails
// validation.)
func (w *writer) sighting(r Record, name, malwareID, created, identity string) {
	c := r.Community
	s := c.Sightings
	if !s.Any() {
		return
	}
	changed := created
	if !s.UpdatedAt.IsZero() {
		if u := stamp(s.UpdatedAt); u > changed {
			changed = u
		}
	}
	w.object()
	w.int("count", min(s.Seen, 999_999_999))
	w.str("created", created)
	w.str("created_by_ref", identity)
	w.str("description", fmt.Sprintf("Sightings of %s reported to threatd: seen %s (firewall blocks, scan findings and people's reports), "+
		"reported a false positive %s, no longer active %s.", name, times(s.Seen), times(s.FalsePositive), times(s.Expired)))
	w.key("extensions")
	w.b = append(w.b, `{"`+SightingExtension+`":{"disputed":`...)
	w.b = strconv.AppendBool(w.b, c.Disputed)
	w.b = append(w.b, `,"expired":`...)
	w.b = strconv.AppendInt(w.b, s.Expired, 10)
	w.b = append(w.b, `,"extension_type":"property-extension","false_positive":`...)
	w.b = strconv.AppendInt(w.b, s.FalsePositive, 10)
	w.b = append(w.b, '}', '}')
	w.str("id", id("sighting", r.Threat.ID))
	if !s.LastSeen.IsZero() {
		w.str("last_seen", stamp(s.LastSeen))
	}
	w.str("modified", changed)
	w.strs("object_marking_refs", tlpWhiteRefs)
	w.str("sighting_of_ref", malwareID)
	w.str("spec_version", "2.1")
	w.str("type", "sighting")
	w.strs("where_sighted_refs", []string{identity})
	w.end()
}

// campaigns writes each campaign of a report (a campaign object, the same
// in every record that names it) and the malware's attributed-to
// relationship to it.
func (w *writer) campaigns(r Record, malwareID, identity string) {
	for _, c := range r.Community.Campaigns {
		cid := id("campaign", c.ID)
		created, modified := stamp(c.CreatedAt), stamp(c.UpdatedAt)
		if modified < created {
			modified = created
		}
		if !w.seen[cid] {
			if w.seen != nil {
				w.seen[cid] = true
			}
			w.object()
			w.str("created", created)
			w.str("created_by_ref", identity)
			if c.Description != "" {
				w.str("description", c.Description)
			}
			w.str("id", cid)
			w.str("modified", modified)
			w.str("name", c.Name)
			w.strs("object_marking_refs", tlpWhiteRefs)
			w.str("spec_version", "2.1")
			w.str("type", "campaign")
			w.end()
		}
		w.object()
		w.str("created", created)
		w.str("created_by_ref", identity)
		w.str("id", id("relationship", malwareID, "attributed-to", cid))
		w.str("modified", modified)
		w.strs("object_marking_refs", tlpWhiteRefs)
		w.str("relationship_type", "attributed-to")
		w.str("source_ref", malwareID)
		w.str("spec_version", "2.1")
		w.str("target_ref", cid)
		w.str("type", "relationship")
		w.end()
	}
}

// AppendRecordObjects appends the objects of r to b as a JSON array: the
// malware, then (unless the report is withdrawn) its sighting and
// campaigns, then an indicator and its relationship per indicator of
// compromise. identity is the service's identity's id (IdentityID).
func AppendRecordObjects(b []byte, r Record, identity string) []byte {
	w := writer{b: append(b, '[')}
	w.record(r, identity)
	return append(w.b, ']')
}
