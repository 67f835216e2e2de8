package core

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core/ioc"
)

// STIXNamespace is the UUIDv5 namespace of every threatd STIX id.
var STIXNamespace = uuid.MustParse("7d5f3a52-6a1e-4c55-9a0e-1f9c1b6e2a11")

// STIXID is the id of the STIX object of a kind named by parts: a UUIDv5,
// so that the same parts always yield the same object (package stix). The
// objects of a report have the ids STIXIDsOf gives.
func STIXID(kind string, parts ...string) string {
	var buf [256]byte
	return stixIDString(kind, nameUUID(appendName(buf[:0], kind, parts...)))
}

// appendName appends what an object's UUIDv5 hashes: the namespace, then
// its name, kind + "\x00" + the parts joined by "\x00". A part more is
// appended as "\x00" + part.
func appendName(b []byte, kind string, parts ...string) []byte {
	b = append(append(append(b, STIXNamespace[:]...), kind...), 0)
	for i, p := range parts {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, p...)
	}
	return b
}

// nameUUID is uuid.NewSHA1's UUIDv5 of what appendName appended, without
// its allocations: a TAXII pull names every object it renders (the
// hasher, its sum and the name were four of each id's six allocations).
// TestSTIXIDIsUUIDv5OfTheName holds it to uuid.NewSHA1.
func nameUUID(name []byte) uuid.UUID {
	sum := sha1.Sum(name)
	var u uuid.UUID
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return u
}

// stixIDString is kind + "--" + u.String(), in one allocation.
func stixIDString(kind string, u uuid.UUID) string {
	var buf [64]byte
	b := append(append(buf[:0], kind...), "--"...)
	for i, part := range [][]byte{u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]} {
		if i > 0 {
			b = append(b, '-')
		}
		b = hex.AppendEncode(b, part)
	}
	return string(b)
}

// STIXIDs names the STIX objects of one report: its malware object, and an
// indicator and a relationship per indicator of compromise (package stix).
// Each id is a pure function of the report's id and the object's content,
// so a report always yields the same ids (docs/decisions/0021).
//
// A report stored since migration 0021 has derived ids: the UUID keeps the
// first 64 bits of the report's id (a UUIDv7: its creation time) and 58
// bits of the UUIDv5 of the object's name, so that storage finds the report
// of an object by a range of its primary key (STIXReportRange), without a
// table of ids. A report stored before keeps the ids it was published
// with, the UUIDv5 of the name (STIXID): listed, storage keeps them in a
// table (stix_objects). A report whose id is not a canonical UUID has
// listed ids too.
type STIXIDs struct {
	threatID string
	prefix   uuid.UUID // the report's id, when derived
	listed   bool
}

// STIXIDsOf names the objects of the report threatID; legacy for a report
// stored before derived ids (Threat.LegacySTIXIDs).
func STIXIDsOf(threatID string, legacy bool) STIXIDs {
	s := STIXIDs{threatID: threatID, listed: true}
	if legacy {
		return s
	}
	if u, err := uuid.Parse(threatID); err == nil && u.String() == threatID {
		s.prefix, s.listed = u, false
	}
	return s
}

// STIXIDs names t's STIX objects.
func (t Threat) STIXIDs() STIXIDs { return STIXIDsOf(t.ID, t.LegacySTIXIDs) }

// Listed says whether storage must list the ids in its table of object
// ids: STIXReportRange does not find the report from them.
func (s STIXIDs) Listed() bool { return s.listed }

func (s STIXIDs) id(kind string, parts ...string) string {
	var buf [256]byte
	name := appendName(buf[:0], kind, s.threatID)
	for _, p := range parts {
		name = append(append(name, 0), p...)
	}
	h := nameUUID(name)
	if s.listed {
		return stixIDString(kind, h)
	}
	var o uuid.UUID
	copy(o[:8], s.prefix[:8])
	// Bytes 0-7 are the report's, but for the version: the object's UUID
	// is a version 5, variant RFC 4122, as the STIX schemas require; the
	// report's version moves to byte 8, beside the variant bits.
	o[6] = 0x50 | s.prefix[6]&0x0f
	o[8] = 0x80 | (s.prefix[6]>>4)<<2 | h[8]&0x03
	copy(o[9:], h[9:])
	return stixIDString(kind, o)
}

// Malware is the id of the report's malware object.
func (s STIXIDs) Malware() string { return s.id("malware") }

// Indicator is the id of the indicator object of one of the report's
// indicators of compromise.
func (s STIXIDs) Indicator(ind ioc.IOC) string { return s.id("indicator", ind.Type, ind.Value) }

// Relationship is the id of the "indicates" relationship between an
// indicator and the report's malware object.
func (s STIXIDs) Relationship(ind ioc.IOC) string {
	return s.id("relationship", ind.Type, ind.Value, "indicates")
}

// All are the ids of every object the report with these indicators may be
// published as. An indicator the STIX mapping has no pattern for is listed
// too; it is never found.
func (s STIXIDs) All(iocs []ioc.IOC) []string {
	ids := make([]string, 0, 1+2*len(iocs))
	ids = append(ids, s.Malware())
	for _, ind := range iocs {
		ids = append(ids, s.Indicator(ind), s.Relationship(ind))
	}
	return ids
}

// STIXReportRange returns the range of report ids (both ends included, in
// the order of the lower-case hexadecimal digits) that holds the report of
// the object objectID if its id is derived: every report whose id shares
// its first 64 bits. ok is false for a string that is not a STIX id. A
// listed id gives a range that holds no report but by chance; whoever
// looks a report up this way checks that the report has the object.
func STIXReportRange(objectID string) (lo, hi string, ok bool) {
	i := strings.Index(objectID, "--")
	if i <= 0 {
		return "", "", false
	}
	o, err := uuid.Parse(objectID[i+2:])
	if err != nil || o.String() != objectID[i+2:] {
		return "", "", false
	}
	var p [8]byte
	copy(p[:], o[:8])
	p[6] = (o[8]>>2&0x0f)<<4 | o[6]&0x0f
	prefix := fmt.Sprintf("%x-%x-%x", p[:4], p[4:6], p[6:8])
	return prefix + "-0000-000000000000", prefix + "-ffff-ffffffffffff", true
}
