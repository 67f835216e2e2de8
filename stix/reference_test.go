package stix

import (
	"fmt"
	"strings"

	"github.com/threatd/threatd/core"
)

// The reference mapping: each record's objects built as maps, as the
// exporter built them before it wrote them straight to JSON (write.go).
// Tests read properties from it, and TestWriterIsTheMapping holds the
// writer to it, byte for byte, through encoding/json.

// RecordObjects maps one record to its objects: the malware, then an
// indicator and its relationship per indicator of compromise.
func RecordObjects(r Record, service string) []Object { return mapRecord(r, IdentityID(service)) }

func mapRecord(r Record, identity string) []Object {
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
		name = fmt.Sprintf("%s (%s)", t.ResourceIdentifier, t.Registry)
	}
	// A withdrawn report's objects are published once more, revoked (STIX
	// 2.1 §3.6): a consumer that holds them must stop using them.
	revoked := t.Status == core.StatusRejected
	createdStamp, modifiedStamp, validStamp := stamp(created), stamp(modified), stamp(validFrom)
	first := firstLine(t.Details.ThreatDescription)
	common := func(kind string) Object {
		// Sized for an indicator's properties: a map grown past its first
		// group was a tenth of the exporter's CPU in a TAXII pull.
		o := make(Object, 20)
		o["type"], o["spec_version"], o["created"], o["modified"] = kind, "2.1", createdStamp, modifiedStamp
		o["created_by_ref"], o["object_marking_refs"] = identity, []string{TLPWhite}
		if revoked {
			o["revoked"] = true
		}
		return o
	}
	malware := common("malware")
	ids := t.STIXIDs()
	malware["id"] = ids.Malware()
	malware["name"] = name
	malware["is_family"] = false
	malware["malware_types"] = malwareTypes(t.Details.Tags)
	malware["description"] = t.Details.ThreatDescription
	if len(t.Details.Tags) > 0 {
		malware["labels"] = t.Details.Tags
	}
	if refs := externalRefs(t); len(refs) > 0 {
		malware["external_references"] = refs
	}
	if t.Details.FirstSeen != nil {
		malware["first_seen"] = stamp(*t.Details.FirstSeen)
	}
	if t.Details.LastSeen != nil && (t.Details.FirstSeen == nil || !t.Details.LastSeen.Before(*t.Details.FirstSeen)) {
		malware["last_seen"] = stamp(*t.Details.LastSeen)
	}
	out := []Object{malware}
	if !revoked {
		out = communityObjects(out, r, malware, identity)
		out = campaignObjects(out, r, malware, identity)
	}
	for _, x := range r.IOCs {
		pattern, ok := Pattern(x)
		if !ok {
			continue
		}
		ind := common("indicator")
		ind["id"] = ids.Indicator(x)
		ind["name"] = x.Type + " " + x.Value + " of " + name
		ind["description"] = indicatorDescription(x, name, first)
		ind["indicator_types"] = []string{"malicious-activity"}
		ind["pattern"] = pattern
		ind["pattern_type"] = "stix"
		ind["pattern_version"] = "2.1"
		ind["valid_from"] = validStamp
		if x.Confidence > 0 {
			ind["confidence"] = x.Confidence
		}
		if x.Origin != "" {
			ind["extensions"] = map[string]any{OriginExtension: map[string]any{"extension_type": "property-extension", "origin": x.Origin}}
		}
		if t.Details.SeverityLevel != "" {
			ind["labels"] = []string{"severity:" + string(t.Details.SeverityLevel)}
		}
		rel := common("relationship")
		rel["id"] = ids.Relationship(x)
		rel["relationship_type"] = "indicates"
		rel["source_ref"] = ind["id"]
		rel["target_ref"] = malware["id"]
		out = append(out, ind, rel)
	}
	return out
}

// communityObjects adds what the community says of a published report:
// its confidence on the malware object (whose modified moves with it) and,
// once anyone reported a sighting of it, a sighting of the malware: count
// its seen sightings, and its false-positive and expired ones, with
// whether a dispute is open, in the SightingExtension. (STIX's opinion
// object would say "disagree", but the OASIS bundle schema does not list
// it, so a bundle carrying one fails validation.)
func communityObjects(out []Object, r Record, malware Object, identity string) []Object {
	c, t := r.Community, r.Threat
	malware["confidence"] = max(0, min(100, c.Confidence))
	if !c.ChangedAt.IsZero() && stamp(c.ChangedAt) > malware["modified"].(string) {
		malware["modified"] = stamp(c.ChangedAt)
	}
	s := c.Sightings
	if !s.Any() {
		return out
	}
	created := malware["created"].(string)
	changed := created
	if !s.UpdatedAt.IsZero() && stamp(s.UpdatedAt) > changed {
		changed = stamp(s.UpdatedAt)
	}
	o := Object{"type": "sighting", "spec_version": "2.1", "id": id("sighting", t.ID), "created": created, "modified": changed,
		"created_by_ref": identity, "object_marking_refs": []string{TLPWhite},
		"sighting_of_ref": malware["id"], "count": min(s.Seen, 999_999_999), "where_sighted_refs": []string{identity},
		"description": fmt.Sprintf("Sightings of %s reported to threatd: seen %s (firewall blocks, scan findings and people's reports), "+
			"reported a false positive %s, no longer active %s.", malware["name"], times(s.Seen), times(s.FalsePositive), times(s.Expired)),
		"extensions": map[string]any{SightingExtension: map[string]any{"extension_type": "property-extension",
			"false_positive": s.FalsePositive, "expired": s.Expired, "disputed": c.Disputed}},
	}
	if !s.LastSeen.IsZero() {
		o["last_seen"] = stamp(s.LastSeen)
	}
	return append(out, o)
}

// campaignObjects adds each campaign of a published report (a campaign
// object, the same in every record that names it) and the malware's
// attributed-to relationship to it.
func campaignObjects(out []Object, r Record, malware Object, identity string) []Object {
	for _, c := range r.Community.Campaigns {
		cid := id("campaign", c.ID)
		created, modified := stamp(c.CreatedAt), stamp(c.UpdatedAt)
		if modified < created {
			modified = created
		}
		camp := Object{"type": "campaign", "spec_version": "2.1", "id": cid, "created": created, "modified": modified,
			"created_by_ref": identity, "object_marking_refs": []string{TLPWhite}, "name": c.Name}
		if c.Description != "" {
			camp["description"] = c.Description
		}
		rel := Object{"type": "relationship", "spec_version": "2.1", "id": id("relationship", malware["id"].(string), "attributed-to", cid),
			"created": created, "modified": modified, "created_by_ref": identity, "object_marking_refs": []string{TLPWhite},
			"relationship_type": "attributed-to", "source_ref": malware["id"], "target_ref": cid}
		out = append(out, camp, rel)
	}
	return out
}

func externalRefs(t core.Threat) []map[string]any {
	var refs []map[string]any
	if t.Details.OSVAdvisoryURL != "" {
		refs = append(refs, map[string]any{"source_name": "osv", "url": t.Details.OSVAdvisoryURL})
	}
	for _, u := range strings.Split(t.Details.EvidenceReferences, "|") {
		if u = strings.TrimSpace(u); u != "" {
			refs = append(refs, map[string]any{"source_name": "evidence", "url": u})
		}
	}
	refs = append(refs, map[string]any{"source_name": "threatd", "external_id": t.ID})
	return refs
}
