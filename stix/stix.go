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
	"strconv"
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

// Bundle is a STIX 2.1 bundle: its objects as JSON (AppendRecordObjects
// writes a record's).
type Bundle struct {
	Type    string            `json:"type"`
	ID      string            `json:"id"`
	Objects []json.RawMessage `json:"objects"`
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

// NewBundle maps records to a bundle: the shared objects, then each
// record's (a campaign's object once, however many of its reports the
// bundle holds).
func NewBundle(records []Record, o Options) Bundle {
	if o.Service == "" {
		o.Service = "threatd"
	}
	w := writer{track: true, seen: map[string]bool{}}
	for _, obj := range SharedObjects(o.Service) {
		w.next()
		w.b, _ = AppendJSON(w.b, obj) // strings and maps of them: never an error
	}
	identity := IdentityID(o.Service)
	keys := make([]string, 0, len(records))
	for _, r := range records {
		w.record(r, identity)
		keys = append(keys, r.Threat.ID+"@"+strconv.FormatInt(int64(r.Threat.Revision), 10))
	}
	objects := make([]json.RawMessage, len(w.starts))
	for i, at := range w.starts {
		end := len(w.b)
		if i+1 < len(w.starts) {
			end = w.starts[i+1] - 1 // before the comma
		}
		objects[i] = w.b[at:end:end]
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

// Marshal renders a bundle as JSON.
func (b Bundle) Marshal() ([]byte, error) { return json.MarshalIndent(b, "", "  ") }
