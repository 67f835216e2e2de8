// Package stix maps verified threat records to STIX 2.1 bundles: a malware
// object for each threat, an indicator with a STIX pattern for each of its
// indicators of compromise, "indicates" relationships between them, an
// identity for the service as created_by_ref, and the TLP:WHITE marking.
// Ids are UUIDv5 of the threat id (and the indicator), so exporting the same
// report again yields the same objects; a revision publishes them with
// "modified" advanced (the time it was applied), a withdrawal with
// "revoked": true.
package stix

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// ContentType is the media type of STIX 2.1 bundles.
const ContentType = "application/stix+json;version=2.1"

// Namespace is the UUIDv5 namespace of every threatd STIX id.
var Namespace = core.STIXNamespace

// TLPWhite is STIX 2.1's predefined TLP:WHITE marking definition.
const TLPWhite = "marking-definition--613f2e26-407d-48c7-9eca-b8e91df99dc9"

// epoch dates the service identity and the marking, which never change.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Record is one threat to export: the report and its indicators.
type Record = core.ExportRecord

// Object is one STIX object (a JSON object).
type Object map[string]any

// Bundle is a STIX 2.1 bundle.
type Bundle struct {
	Type    string   `json:"type"`
	ID      string   `json:"id"`
	Objects []Object `json:"objects"`
}

func id(kind string, parts ...string) string { return core.STIXID(kind, parts...) }

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// IdentityID is the id of the service's identity object.
func IdentityID(service string) string { return id("identity", service) }

// Options name the producer of a bundle.
type Options struct {
	// Service is the identity's name (e.g. "threatd").
	Service string
	// BundleKey makes the bundle id deterministic for the same content.
	BundleKey string
}

// NewBundle maps records to a bundle.
func NewBundle(records []Record, o Options) Bundle {
	if o.Service == "" {
		o.Service = "threatd"
	}
	objects := SharedObjects(o.Service)
	var keys []string
	// A campaign's object comes once, however many of its reports the
	// bundle holds.
	campaigns := map[string]bool{}
	for _, r := range records {
		for _, obj := range RecordObjects(r, o.Service) {
			if obj["type"] == "campaign" {
				if campaigns[obj["id"].(string)] {
					continue
				}
				campaigns[obj["id"].(string)] = true
			}
			objects = append(objects, obj)
		}
		keys = append(keys, r.Threat.ID+"@"+fmt.Sprint(r.Threat.Revision))
	}
	sort.Strings(keys)
	return Bundle{Type: "bundle", ID: id("bundle", o.BundleKey, strings.Join(keys, ",")), Objects: objects}
}

// OriginExtension is the id of the extension definition of threatd's
// indicator property (STIX 2.1 §7.3): an indicator carries where its value
// was found as extensions[OriginExtension].origin, a property extension,
// instead of a custom top-level property, which STIX 2.1 deprecates (the
// OASIS validator warns on every one).
var OriginExtension = id("extension-definition", "threatd-indicator-origin")

// SightingExtension is the id of the extension definition of threatd's
// sighting properties: false_positive and expired count the sightings of
// those types, disputed says whether false-positive votes have put the
// report back in review.
var SightingExtension = id("extension-definition", "threatd-sighting-types")

// SharedObjects are the objects every record refers to: the service's
// identity (created_by_ref), the TLP:WHITE marking definition, and the
// extension definitions of the indicators' origin and of the sightings'
// types.
func SharedObjects(service string) []Object {
	identity := IdentityID(service)
	return []Object{
		{"type": "identity", "spec_version": "2.1", "id": identity, "created": stamp(epoch), "modified": stamp(epoch),
			"name": service, "identity_class": "system", "description": "threatd threat-intelligence service"},
		{"type": "marking-definition", "spec_version": "2.1", "id": TLPWhite, "created": "2017-01-20T00:00:00.000Z",
			"definition_type": "tlp", "name": "TLP:WHITE", "definition": map[string]any{"tlp": "white"}},
		{"type": "extension-definition", "spec_version": "2.1", "id": OriginExtension, "created": stamp(epoch), "modified": stamp(epoch),
			"created_by_ref": identity, "object_marking_refs": []string{TLPWhite},
			"name": "threatd indicator origin", "version": "1.0", "extension_types": []string{"property-extension"},
			"description": "Where threatd found an indicator's value in its report.",
			"schema": "A property extension of indicator with one property, origin (string): where the indicator's value was found. " +
				"asset: the report's subject itself (its package, URL, domain, IP address, wallet or image); " +
				"osv.iocs: listed by an imported OSV record; payload: found in the report's texts (payload_description, threat_description)."},
		{"type": "extension-definition", "spec_version": "2.1", "id": SightingExtension, "created": stamp(epoch), "modified": stamp(epoch),
			"created_by_ref": identity, "object_marking_refs": []string{TLPWhite},
			"name": "threatd sighting types", "version": "1.0", "extension_types": []string{"property-extension"},
			"description": "The sightings of a threatd report other than seen ones (MISP's sighting types).",
			"schema": "A property extension of sighting with three properties: false_positive (integer), how many times people " +
				"reported the threat a false positive; expired (integer), how many times they reported it no longer active; " +
				"disputed (boolean), whether false-positive votes have put the report back in review. The sighting's count is " +
				"its seen sightings."},
	}
}

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

// times says how often: "once", "3 times".
func times(n int64) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// firstLine is the first line of a report's description, cut to 300
// characters: what each of its indicators' descriptions ends with.
func firstLine(threat string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(threat), "\n")
	if r := []rune(first); len(r) > 300 {
		first = string(r[:299]) + "…"
	}
	return first
}

// indicatorDescription says what an indicator is evidence of (the OASIS
// validator's SHOULD for indicators): the kind of indicator, the report's
// subject, and first, the first line of the report's description
// (firstLine).
func indicatorDescription(x ioc.IOC, subject, first string) string {
	kind := x.Type
	if x.Detail != "" {
		kind += " (" + x.Detail + ")"
	}
	d := fmt.Sprintf("A %s indicator of compromise stated by the threatd report on %s.", kind, subject)
	if len(x.Versions) > 0 {
		d = fmt.Sprintf("A %s indicator of compromise stated by the threatd report on %s, versions %s.", kind, subject, strings.Join(x.Versions, ", "))
	}
	if first != "" {
		d += " " + first
	}
	return d
}

// malwareVocab maps tags onto STIX's malware-type-ov.
var malwareVocab = map[string]string{"backdoor": "backdoor", "bot": "bot", "botnet": "bot", "dropper": "dropper", "downloader": "downloader",
	"keylogger": "keylogger", "ransomware": "ransomware", "rat": "remote-access-trojan", "remote-access-trojan": "remote-access-trojan",
	"rootkit": "rootkit", "spyware": "spyware", "trojan": "trojan", "worm": "worm", "virus": "virus", "miner": "resource-exploitation",
	"cryptominer": "resource-exploitation", "stealer": "spyware", "infostealer": "spyware", "token-stealer": "spyware", "exploit-kit": "exploit-kit"}

// malwareTypes maps tags onto STIX's malware-type-ov where they match.
func malwareTypes(tags []string) []string {
	var out []string
	for _, tag := range tags {
		if v, ok := malwareVocab[strings.ToLower(tag)]; ok && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		out = []string{"unknown"}
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

// Marshal renders a bundle as JSON.
func (b Bundle) Marshal() ([]byte, error) { return json.MarshalIndent(b, "", "  ") }
