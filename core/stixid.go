package core

import (
	"strings"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core/ioc"
)

// STIXNamespace is the UUIDv5 namespace of every threatd STIX id.
var STIXNamespace = uuid.MustParse("7d5f3a52-6a1e-4c55-9a0e-1f9c1b6e2a11")

// STIXID is the id of the STIX object of a kind named by parts: a UUIDv5,
// so that the same report always yields the same objects (package stix).
func STIXID(kind string, parts ...string) string {
	return kind + "--" + uuid.NewSHA1(STIXNamespace, []byte(kind+"\x00"+strings.Join(parts, "\x00"))).String()
}

// STIXMalwareID is the id of a report's malware object.
func STIXMalwareID(threatID string) string { return STIXID("malware", threatID) }

// STIXIndicatorID is the id of the indicator object of one of a report's
// indicators of compromise.
func STIXIndicatorID(threatID string, ind ioc.IOC) string {
	return STIXID("indicator", threatID, ind.Type, ind.Value)
}

// STIXRelationshipID is the id of the "indicates" relationship between an
// indicator and its report's malware object.
func STIXRelationshipID(threatID string, ind ioc.IOC) string {
	return STIXID("relationship", threatID, ind.Type, ind.Value, "indicates")
}

// STIXObjectIDs are the ids of the STIX objects a report with these
// indicators may be published as (a malware object, an indicator and a
// relationship per indicator): storage keeps them to find a report by the
// id of any of its objects (TAXII's object endpoints). An indicator the
// STIX mapping has no pattern for is listed too; it is never found.
func STIXObjectIDs(threatID string, iocs []ioc.IOC) []string {
	ids := make([]string, 0, 1+2*len(iocs))
	ids = append(ids, STIXMalwareID(threatID))
	for _, ind := range iocs {
		ids = append(ids, STIXIndicatorID(threatID, ind), STIXRelationshipID(threatID, ind))
	}
	return ids
}
