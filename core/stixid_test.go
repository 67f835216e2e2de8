package core_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// stixIdentifier is the identifier pattern of the OASIS STIX 2.1 schemas
// (common/identifier.json).
var stixIdentifier = regexp.MustCompile(`^[a-z][a-z0-9-]+[a-z0-9]--[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-5][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$`)

func TestSTIXIDs(t *testing.T) {
	const report = "019ab5c2-7d1e-7f3a-9b2c-4d5e6f708192"
	domain := ioc.IOC{Type: "domain", Value: "evil.example"}

	// Published ids never change: a TAXII client keys on them. These are
	// the ids this report's objects were published with.
	legacy := core.STIXIDsOf(report, true)
	derived := core.STIXIDsOf(report, false)
	for _, c := range []struct{ got, want string }{
		{legacy.Malware(), "malware--83178b3c-c5cd-5c14-8418-b1f2782225cf"},
		{legacy.Malware(), core.STIXID("malware", report)},
		{legacy.Indicator(domain), core.STIXID("indicator", report, "domain", "evil.example")},
		{legacy.Relationship(domain), core.STIXID("relationship", report, "domain", "evil.example", "indicates")},
		{derived.Malware(), "malware--019ab5c2-7d1e-5f3a-9c18-b1f2782225cf"},
		{derived.Indicator(domain), "indicator--019ab5c2-7d1e-5f3a-9ec9-1bf9217afa1b"},
	} {
		if c.got != c.want {
			t.Errorf("id %s, want %s", c.got, c.want)
		}
	}
	if !legacy.Listed() || derived.Listed() {
		t.Errorf("listed: legacy %v, derived %v", legacy.Listed(), derived.Listed())
	}
	if got := (core.Threat{ID: report, LegacySTIXIDs: true}).STIXIDs().Malware(); got != legacy.Malware() {
		t.Errorf("Threat.STIXIDs of a legacy report: %s", got)
	}
	// A report id that is not a canonical UUID cannot be found by range:
	// its ids are listed.
	for _, id := range []string{"t1", "019AB5C2-7D1E-7F3A-9B2C-4D5E6F708192", "{" + report + "}"} {
		if s := core.STIXIDsOf(id, false); !s.Listed() || s.Malware() != core.STIXID("malware", id) {
			t.Errorf("report %q: listed %v, malware %s", id, s.Listed(), s.Malware())
		}
	}

	// Many reports and indicators: every id a valid STIX identifier of
	// version 5, distinct, and its range holds its report and no other.
	seen := map[string]bool{}
	var reports []string
	for i := range 300 {
		id := uuid.Must(uuid.NewV7()).String()
		if i%3 == 0 {
			id = uuid.NewString() // a version 4 id (a report copied from elsewhere)
		}
		reports = append(reports, id)
	}
	for _, r := range reports {
		var iocs []ioc.IOC
		for j := range 20 {
			iocs = append(iocs, ioc.IOC{Type: "url", Value: fmt.Sprintf("https://evil.example/%d", j)})
		}
		for _, id := range core.STIXIDsOf(r, false).All(iocs) {
			if !stixIdentifier.MatchString(id) {
				t.Fatalf("report %s: %s is not a STIX identifier", r, id)
			}
			if u := uuid.MustParse(id[len(id)-36:]); u.Version() != 5 || u.Variant() != uuid.RFC4122 {
				t.Fatalf("%s: version %d, variant %v", id, u.Version(), u.Variant())
			}
			if seen[id] {
				t.Fatalf("%s given twice", id)
			}
			seen[id] = true
			lo, hi, ok := core.STIXReportRange(id)
			if !ok {
				t.Fatalf("%s: no range", id)
			}
			for _, other := range reports {
				if in := lo <= other && other <= hi; in != (other == r) {
					t.Fatalf("%s: range [%s, %s] holds %s: %v", id, lo, hi, other, in)
				}
			}
		}
	}
	for _, bad := range []string{"", "malware", "malware--", "--" + report, "malware--" + report + "x", "malware--{" + report + "}"} {
		if _, _, ok := core.STIXReportRange(bad); ok {
			t.Errorf("STIXReportRange(%q) is ok", bad)
		}
	}
}

// STIXID is the UUIDv5 of the object's name as uuid.NewSHA1 makes it, for
// any parts: none, empty ones, names longer than its buffer, any bytes.
func TestSTIXIDIsUUIDv5OfTheName(t *testing.T) {
	long := strings.Repeat("évil.example/", 40)
	for _, parts := range [][]string{nil, {""}, {"", ""}, {"threatd"}, {"019ab5c2-7d1e-7f3a-9b2c-4d5e6f708192", "url", long},
		{"a\x00b", "\xff\xfe", "indicates"}, {long, long, long}} {
		for _, kind := range []string{"malware", "x-very-long-custom-object-kind-name-of-forty-bytes-or-more"} {
			want := kind + "--" + uuid.NewSHA1(core.STIXNamespace, []byte(kind+"\x00"+strings.Join(parts, "\x00"))).String()
			if got := core.STIXID(kind, parts...); got != want {
				t.Errorf("STIXID(%q, %q) = %s, want %s", kind, parts, got, want)
			}
		}
	}
	// A report's listed ids are STIXID's of the report and the parts.
	for _, report := range []string{"legacy-report", long} {
		ids := core.STIXIDsOf(report, true)
		x := ioc.IOC{Type: "url", Value: long}
		if ids.Indicator(x) != core.STIXID("indicator", report, "url", long) || ids.Malware() != core.STIXID("malware", report) {
			t.Errorf("listed ids of %q differ from STIXID", report)
		}
	}
}
