package osv

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// head is what a record's head read decodes: enough to name its import
// records (the fields Map names them from).
type head struct {
	ID       string         `json:"id"`
	Modified string         `json:"modified"`
	Affected []headAffected `json:"affected"`
}

// headAffected is what a head decodes of an affected entry.
type headAffected struct {
	Package Package `json:"package"`
}

// readHead returns the upstream ids and modified time of a record, as Map
// would name its import records; false when Map would reject it (Map then
// says why).
func readHead(data []byte) (*core.UpstreamVersion, bool) {
	h, err := decodeHead(data)
	if err != nil || h.ID == "" || len(h.Affected) == 0 {
		return nil, false
	}
	modified, err := stamp(h.ID, "modified", h.Modified)
	if err != nil {
		return nil, false
	}
	ids := make([]string, len(h.Affected))
	for i, a := range h.Affected {
		id, err := upstreamID(h.ID, len(h.Affected), i, a.Package)
		if err != nil {
			return nil, false
		}
		ids[i] = id
	}
	return &core.UpstreamVersion{Source: SourceName, IDs: ids, Modified: modified}, true
}

// upstreamID names the import record of affected package i of n in record
// id: the record's id, qualified by registry and name when it has several.
func upstreamID(id string, n, i int, p Package) (string, error) {
	if p.Name == "" {
		return "", fmt.Errorf("%s: affected[%d] has no package", id, i)
	}
	registry, err := registryOf(id, p)
	if err != nil {
		return "", err
	}
	if n > 1 {
		return id + "/" + registry + "/" + p.Name, nil
	}
	return id, nil
}

// registryOf maps a package's OSV ecosystem to a threatd registry: OSV's
// ecosystems (core.OSVEcosystems), and OpenVSX, which threatd reads too
// (docs/ingestion.md) though the OSV schema does not list it.
func registryOf(id string, p Package) (string, error) {
	eco := strings.SplitN(p.Ecosystem, ":", 2)[0]
	registry, ok := core.RegistryOfOSVEcosystem(eco)
	if !ok && strings.EqualFold(eco, "openvsx") {
		registry, ok = core.RegistryOpenVSX, true
	}
	if !ok {
		return "", fmt.Errorf("%s: ecosystem %q is not supported", id, p.Ecosystem)
	}
	return registry, nil
}

// Record is what threatd reads of an OSV record (the OSV schema's field
// names; the rest is ignored). It is decoded with encoding/json: the
// protobuf bindings' protojson decoding was the costliest step of a
// re-import at a million records.
type Record struct {
	ID         string      `json:"id"`
	Summary    string      `json:"summary"`
	Details    string      `json:"details"`
	Published  string      `json:"published"`
	Modified   string      `json:"modified"`
	Withdrawn  string      `json:"withdrawn"`
	Affected   []Affected  `json:"affected"`
	References []Reference `json:"references"`
	Credits    []struct {
		Name string `json:"name"`
	} `json:"credits"`
	DatabaseSpecific *DatabaseSpecific `json:"database_specific"`
}

// Affected is one affected package of a record.
type Affected struct {
	Package Package `json:"package"`
	Ranges  []struct {
		Events []Event `json:"events"`
	} `json:"ranges"`
	Versions []string `json:"versions"`
}

// Package is an affected package.
type Package struct {
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
}

// Event is one event of an affected range.
type Event struct {
	Introduced   string `json:"introduced"`
	Fixed        string `json:"fixed"`
	LastAffected string `json:"last_affected"`
	Limit        string `json:"limit"`
}

// Reference is one reference link of a record.
type Reference struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// DatabaseSpecific is what threatd reads of database_specific.
type DatabaseSpecific struct {
	Origins []struct {
		Source string `json:"source"`
	} `json:"malicious-packages-origins"`
	IOCs any `json:"iocs"`
}

// stamp parses an OSV timestamp (RFC 3339).
func stamp(id, field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %s %q is not an RFC 3339 time", id, field, s)
	}
	return t.UTC(), nil
}

// Map turns one OSV record into import records, one per affected package.
func Map(v *Record, now time.Time) ([]core.ImportRecord, error) {
	if v.ID == "" {
		return nil, fmt.Errorf("no id")
	}
	if len(v.Affected) == 0 {
		return nil, fmt.Errorf("%s: no affected package", v.ID)
	}
	if v.Published == "" || v.Modified == "" {
		return nil, fmt.Errorf("%s: published and modified are required", v.ID)
	}
	published, err := stamp(v.ID, "published", v.Published)
	if err != nil {
		return nil, err
	}
	modified, err := stamp(v.ID, "modified", v.Modified)
	if err != nil {
		return nil, err
	}
	if v.Withdrawn != "" {
		if _, err := stamp(v.ID, "withdrawn", v.Withdrawn); err != nil {
			return nil, err
		}
	}
	// The record's own fields (its long texts above all) are computed once
	// and shared by the reports of all its affected packages: a record with
	// a 200 KB details and 10,000 affected entries once took 3 GB, copying
	// the text per package.
	shared := recordFields(v, published, modified)
	out := make([]core.ImportRecord, 0, len(v.Affected))
	for i := range v.Affected {
		a := &v.Affected[i]
		upstream, err := upstreamID(v.ID, len(v.Affected), i, a.Package)
		if err != nil {
			return nil, err
		}
		registry, _ := registryOf(v.ID, a.Package)
		sub := packageFields(shared, v, a, registry)
		var payload string
		if len(out) > 0 {
			// The shared payload was validated with the first package's
			// report: validate only what differs (a 200 KB text checked
			// 10,000 times took seconds).
			payload, sub.PayloadDescription = out[0].Threat.Details.PayloadDescription, nil
		}
		th, err := core.NewImportedThreat(sub, now)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", v.ID, err)
		}
		if len(out) > 0 {
			th.Details.PayloadDescription = payload
		}
		th.Source, th.UpstreamID = SourceName, upstream
		th.UpstreamModified = &modified
		th.VerifiedAt = &published
		th.AllVersions = allVersions(a)
		out = append(out, core.ImportRecord{Threat: th, Withdrawn: v.Withdrawn != ""})
	}
	return out, nil
}

// recordFields are the fields of the reports of v that do not depend on the
// affected package.
func recordFields(v *Record, published, modified time.Time) core.Submission {
	str := func(s string) *string { return &s }
	payload := truncate(clean(v.Details), maxPayload)
	if iocs, more := iocList(v.DatabaseSpecific); len(iocs) > 0 {
		var b strings.Builder
		b.WriteString("\n\n" + ioc.Section + "\n\n")
		if more > 0 {
			fmt.Fprintf(&b, "(the first %d of %d: threatd imports at most %d per record; %d skipped)\n\n", len(iocs), len(iocs)+more, MaxIOCs, more)
		}
		for _, i := range iocs {
			b.WriteString("- " + ioc.Defang(i) + "\n")
		}
		// The indicators are what a consumer acts on: a long details text
		// is cut to make room for them, never the other way round.
		section := truncate(b.String(), maxIOCSection)
		payload = truncate(payload, maxPayload-utf8.RuneCountInString(section)) + section
	}
	var refs []string
	seenRef := map[string]bool{}
	for _, r := range v.References {
		if u := strings.TrimSpace(r.URL); (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) && !strings.ContainsAny(u, " |") &&
			len(u) <= core.MaxIdentifierBytes && len(refs) < 50 && !seenRef[u] {
			seenRef[u] = true
			refs = append(refs, u)
		}
	}
	var credits []string
	for _, c := range v.Credits {
		if n := strings.TrimSpace(c.Name); n != "" && len(credits) < 100 && len([]rune(n)) <= 256 {
			credits = append(credits, n)
		}
	}
	last := modified
	if last.Before(published) {
		last = published
	}
	s := core.Submission{
		PayloadDescription: str(payload),
		OSVAdvisoryURL:     str("https://osv.dev/vulnerability/" + v.ID), Tags: tags(v.DatabaseSpecific),
		FirstSeen: str(published.Format(time.RFC3339Nano)), LastSeen: str(last.Format(time.RFC3339Nano)),
		Contributors: credits,
	}
	if desc := strings.TrimSpace(v.Summary); desc != "" {
		s.ThreatDescription = str(truncate(clean(desc), 20000))
	}
	if len(refs) > 0 {
		s.EvidenceReferences = str(strings.Join(refs, "|"))
	}
	return s
}

// packageFields completes shared with the fields of one affected package.
func packageFields(shared core.Submission, v *Record, a *Affected, registry string) core.Submission {
	str := func(s string) *string { return &s }
	s := shared
	s.ReportType, s.ResourceIdentifier, s.Registry = str(string(core.TypePackage)), str(a.Package.Name), str(registry)
	if s.ThreatDescription == nil {
		s.ThreatDescription = str(truncate(clean(fmt.Sprintf("Malicious %s package %s", registry, a.Package.Name)), 20000))
	}
	var versions []string
	seen := map[string]bool{}
	for _, ver := range a.Versions {
		if ver = strings.TrimSpace(ver); core.ValidVersion(ver) && !seen[ver] && len(versions) < 1000 {
			seen[ver] = true
			versions = append(versions, ver)
		}
	}
	if len(versions) > 0 {
		s.VersionInfo = str(strings.Join(versions, ", "))
	}
	return s
}

// allVersions: a range introduced at 0 with no fix affects every version.
func allVersions(a *Affected) bool {
	for _, r := range a.Ranges {
		zero, fixed := false, false
		for _, e := range r.Events {
			if e.Introduced == "0" {
				zero = true
			}
			if e.Fixed != "" || e.LastAffected != "" || e.Limit != "" {
				fixed = true
			}
		}
		if zero && !fixed {
			return true
		}
	}
	return false
}

// tags are the upstream origins of the report (e.g. ghsa-malware, checkmarx).
func tags(ds *DatabaseSpecific) []string {
	out := []string{"malicious-package"}
	if ds == nil {
		return out
	}
	for _, o := range ds.Origins {
		src := strings.TrimSpace(o.Source)
		if src != "" && len(src) <= 64 && !slices.Contains(out, src) && len(out) < 50 {
			out = append(out, src)
		}
	}
	return out
}

// Bounds of an imported payload_description (characters): the submit
// limit, of which the indicators section may take up to maxIOCSection.
const (
	maxPayload    = 200_000
	maxIOCSection = 150_000
)

// MaxIOCs bounds the indicators imported from one record's
// database_specific.iocs; the rest are counted and named as skipped in the
// report's payload.
const MaxIOCs = 10_000

// iocList collects every string under database_specific.iocs, objects'
// members in key order, once each (linear: a record with 380,000 of them
// once took minutes), at most MaxIOCs; more counts the ones left out.
func iocList(ds *DatabaseSpecific) (out []string, more int) {
	if ds == nil {
		return nil, 0
	}
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if s := strings.TrimSpace(x); s != "" && !seen[s] {
				seen[s] = true
				if len(out) < MaxIOCs {
					out = append(out, s)
				} else {
					more++
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(ds.IOCs)
	return out, more
}

// clean removes control characters other than newlines and tabs (and
// makes the text valid UTF-8); text that needs neither is returned as is.
func clean(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// truncate keeps the first n characters of s.
func truncate(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
