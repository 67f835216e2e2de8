package core

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/threatd/threatd/core/versioning"
)

// RequiredFieldsError is the 400 of spec §7 for missing required fields; its
// message names all three, and Missing lists the ones absent.
type RequiredFieldsError struct {
	Missing []string
}

// Error names all three required fields (docs/api/submit.md, "Errors").
func (e *RequiredFieldsError) Error() string {
	return "report_type, resource_identifier and threat_description are required"
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *RequiredFieldsError) Is(target error) bool { return target == ErrInvalid }

// Size limits of free-text fields, in characters.
const (
	maxThreatDescription  = 20000
	maxPayloadDescription = 200000
	maxTags               = 50
	maxTagLen             = 64
	maxEvidence           = 50
	maxVersions           = 1000
)

func present(p *string) bool { return p != nil && strings.TrimSpace(*p) != "" }

// NewThreat validates a submission and returns the report it describes, with
// identifiers normalised and the canonical key computed; id, submitter and
// times are left for the caller. now bounds timestamps in the future. The
// error is the first problem found, in field order (the API's 400).
func NewThreat(s Submission, now time.Time) (Threat, error) {
	t, errs := validateSubmission(s, now, false, false)
	if len(errs) > 0 {
		return Threat{}, errs[0]
	}
	return t, nil
}

// SubmissionProblems lists every problem of a submission at once, in field
// order: a *RequiredFieldsError for the required fields that are absent,
// then a *FieldError per invalid field (the web form shows them all, where
// the API names the first). Nil means NewThreat accepts it.
func SubmissionProblems(s Submission, now time.Time) []error {
	_, errs := validateSubmission(s, now, true, false)
	return errs
}

// NewImportedThreat is NewThreat for a record an upstream source
// publishes: its versions are kept as the upstream names them even where
// submit would refuse a spelling its registry's client cannot install
// (the upstream names what its registry served).
func NewImportedThreat(s Submission, now time.Time) (Threat, error) {
	t, errs := validateSubmission(s, now, false, true)
	if len(errs) > 0 {
		return Threat{}, errs[0]
	}
	return t, nil
}

// validateSubmission is NewThreat; with all, it goes on past a problem to
// report every field's; imported skips the versions' registry rule.
func validateSubmission(s Submission, now time.Time, all, imported bool) (Threat, []error) {
	var errs []error
	fail := func(err error) bool {
		errs = append(errs, err)
		return !all
	}
	var missing []string
	for _, f := range []struct {
		name string
		v    *string
	}{{"report_type", s.ReportType}, {"resource_identifier", s.ResourceIdentifier}, {"threat_description", s.ThreatDescription}} {
		if !present(f.v) {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 && fail(&RequiredFieldsError{Missing: missing}) {
		return Threat{}, errs
	}
	var t Threat
	identity := func() error {
		if !present(s.ReportType) || !present(s.ResourceIdentifier) {
			return nil // already named as missing
		}
		rt, err := ParseReportType(strings.TrimSpace(*s.ReportType))
		if err != nil {
			return err
		}
		t = Threat{ReportType: rt, ResourceIdentifier: strings.TrimSpace(*s.ResourceIdentifier)}
		if present(s.Registry) {
			if t.Registry, err = ParseRegistry("registry", *s.Registry); err != nil {
				return err
			}
		}
		switch rt {
		case TypePackage:
			if t.Registry == "" {
				return Invalid("registry", "is required for package reports: one of %s", strings.Join(PackageRegistries, ", "))
			}
			if !IsPackageRegistry(t.Registry) {
				return Invalid("registry", "must be a package registry (%s) for package reports, not %s", strings.Join(PackageRegistries, ", "), t.Registry)
			}
		case TypeContainer:
			if t.Registry != "" && IsPackageRegistry(t.Registry) {
				return Invalid("registry", "must be a container registry (%s) for container reports, not %s", strings.Join(ContainerRegistries, ", "), t.Registry)
			}
		}
		if t.CanonicalKey, err = CanonicalKey(rt, t.Registry, t.ResourceIdentifier); err != nil {
			return err
		}
		if rt == TypeContainer && t.Registry == "" {
			t.Registry = ContainerRegistryOf(strings.TrimPrefix(t.CanonicalKey, "container:"))
		}
		return nil
	}
	identityOK := true
	if err := identity(); err != nil {
		identityOK = false
		if fail(err) {
			return Threat{}, errs
		}
	}
	for _, c := range detailChecks {
		if c.name == "package_name" && !identityOK {
			continue // judged against an identity that is wrong already
		}
		if c.name == "threat_description" && !present(s.ThreatDescription) {
			continue // named as missing
		}
		err := c.check(&s, &t, now)
		if err == nil && c.name == "version_info" && !imported {
			err = installableVersions(t)
		}
		if err != nil && fail(err) {
			return Threat{}, errs
		}
	}
	if len(errs) > 0 {
		return Threat{}, errs
	}
	return t, nil
}

// The fields with rules of their own (the rule flag of fields.txt): each
// is given the submission and the report as validated so far (its identity
// and the fields before, in Details' order), and sets its field in
// t.Details. Every other field is checked by its kind (detailChecks).
func checkThreatDescription(s *Submission, t *Threat, _ time.Time) (err error) {
	t.Details.ThreatDescription, err = text("threat_description", *s.ThreatDescription, maxThreatDescription, true)
	t.Details.ThreatDescription = strings.TrimSpace(t.Details.ThreatDescription)
	return err
}

func checkPackageName(s *Submission, t *Threat, _ time.Time) (err error) {
	d := &t.Details
	if t.ReportType != TypePackage {
		if present(s.PackageName) {
			d.PackageName, err = text("package_name", strings.TrimSpace(*s.PackageName), maxShortText, false)
		}
		return err
	}
	d.PackageName = t.ResourceIdentifier
	if present(s.PackageName) {
		key, err := CanonicalKey(t.ReportType, t.Registry, *s.PackageName)
		if err != nil {
			return Invalid("package_name", "%s", err.(*FieldError).Message)
		}
		if key != t.CanonicalKey {
			return Invalid("package_name", "must name the same package as resource_identifier (%q is not %q)", *s.PackageName, t.ResourceIdentifier)
		}
		d.PackageName = strings.TrimSpace(*s.PackageName)
	}
	return nil
}

func checkPayloadDescription(s *Submission, t *Threat, _ time.Time) (err error) {
	if present(s.PayloadDescription) {
		// Kept exactly as written: Markdown and defanged IOCs included.
		t.Details.PayloadDescription, err = text("payload_description", *s.PayloadDescription, maxPayloadDescription, true)
	}
	return err
}

func checkSeverityLevel(s *Submission, t *Threat, _ time.Time) (err error) {
	if present(s.SeverityLevel) {
		t.Details.SeverityLevel, err = ParseSeverity(*s.SeverityLevel)
	}
	return err
}

func checkEvidenceReferences(s *Submission, t *Threat, _ time.Time) (err error) {
	if present(s.EvidenceReferences) {
		t.Details.EvidenceReferences, err = evidence("evidence_references", *s.EvidenceReferences)
	}
	return err
}

func checkContactEmail(s *Submission, t *Threat, _ time.Time) error {
	if present(s.ContactEmail) {
		e := strings.TrimSpace(*s.ContactEmail)
		if err := ValidateEmail("contact_email", e); err != nil {
			return err
		}
		t.Details.ContactEmail = e
	}
	return nil
}

func checkTags(s *Submission, t *Threat, _ time.Time) (err error) {
	t.Details.Tags, err = stringList("tags", s.Tags, maxTags, maxTagLen)
	return err
}

func checkVersionInfo(s *Submission, t *Threat, _ time.Time) (err error) {
	if !present(s.VersionInfo) {
		return nil
	}
	t.Details.VersionInfo, err = versions(*s.VersionInfo)
	return err
}

// installableVersions refuses a package report's version that its
// registry's client can never select: it would never block or match
// anything (core/versioning, docs/versions.md).
func installableVersions(t Threat) error {
	if t.ReportType != TypePackage || t.Registry == "" || t.Details.VersionInfo == "" {
		return nil
	}
	for v := range strings.SplitSeq(t.Details.VersionInfo, ",") {
		if err := versioning.Check(t.Registry, v); err != nil {
			return Invalid("version_info", "%s", err.Error())
		}
	}
	return nil
}

func checkLastSeen(s *Submission, t *Threat, now time.Time) (err error) {
	d := &t.Details
	if d.LastSeen, err = timestamp("last_seen", s.LastSeen, now); err != nil {
		return err
	}
	if d.FirstSeen != nil && d.LastSeen != nil && d.LastSeen.Before(*d.FirstSeen) {
		return Invalid("last_seen", "must not be before first_seen")
	}
	return nil
}

func checkOSVAdvisoryURL(s *Submission, t *Threat, _ time.Time) error {
	if present(s.OSVAdvisoryURL) {
		if _, err := canonicalHTTPURL("osv_advisory_url", strings.TrimSpace(*s.OSVAdvisoryURL)); err != nil {
			return err
		}
		t.Details.OSVAdvisoryURL = strings.TrimSpace(*s.OSVAdvisoryURL)
	}
	return nil
}

// text validates free text: valid UTF-8, at most max characters, no control
// characters (newlines and tabs allowed when multiline).
func text(field, s string, max int, multiline bool) (string, error) {
	if !utf8.ValidString(s) {
		return "", Invalid(field, "is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > max {
		return "", Invalid(field, "is longer than %d characters (%d)", max, n)
	}
	for _, r := range s {
		if r == '\n' || r == '\t' || r == '\r' {
			if multiline {
				continue
			}
			return "", Invalid(field, "must be a single line")
		}
		if unicode.IsControl(r) {
			return "", Invalid(field, "contains a control character")
		}
	}
	return s, nil
}

// Tags checks a list of tags as a report's are checked: at most maxItems,
// each trimmed, non-empty, at most 64 characters.
func Tags(field string, in []string, maxItems int) ([]string, error) {
	return stringList(field, in, maxItems, maxTagLen)
}

func stringList(field string, in []string, maxItems, maxLen int) ([]string, error) {
	if len(in) > maxItems {
		return nil, Invalid(field, "has more than %d entries", maxItems)
	}
	out := make([]string, 0, len(in))
	for i, v := range in {
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, Invalid(field, "entry %d is empty", i)
		}
		if _, err := text(field, v, maxLen, false); err != nil {
			return nil, Invalid(field, "entry %d: %s", i, err.(*FieldError).Message)
		}
		out = append(out, v)
	}
	return out, nil
}

// evidence validates a |-separated list of evidence URLs (field names the
// field it came in) and returns it trimmed.
func evidence(field, s string) (string, error) {
	parts := strings.Split(s, "|")
	if len(parts) > maxEvidence {
		return "", Invalid(field, "has more than %d URLs", maxEvidence)
	}
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return "", Invalid(field, "entry %d is empty: URLs are separated by a single |", i)
		}
		if _, err := canonicalHTTPURL(field, p); err != nil {
			return "", Invalid(field, "entry %d: %s", i, err.(*FieldError).Message)
		}
		out = append(out, p)
	}
	return strings.Join(out, "|"), nil
}

// addEvidence appends the URLs of add (evidence_references_add) that cur
// (a report's evidence_references, nil or "" for none) does not list yet.
func addEvidence(cur *string, add string) (string, error) {
	if strings.TrimSpace(add) == "" {
		return "", Invalid(evidenceAddField, "is empty: give one or more URLs separated by |")
	}
	extra, err := evidence(evidenceAddField, add)
	if err != nil {
		return "", err
	}
	var have []string
	if cur != nil && strings.TrimSpace(*cur) != "" {
		have = strings.Split(*cur, "|")
		for i := range have {
			have[i] = strings.TrimSpace(have[i])
		}
	}
	for _, u := range strings.Split(extra, "|") {
		if !slices.Contains(have, u) {
			have = append(have, u)
		}
	}
	if len(have) > maxEvidence {
		return "", Invalid(evidenceAddField, "would give the report %d evidence URLs; at most %d are kept", len(have), maxEvidence)
	}
	return strings.Join(have, "|"), nil
}

var versionRe = regexp.MustCompile(`^[0-9A-Za-z*][0-9A-Za-z.+_~^*-]{0,63}$`)

// versions validates a comma-separated list of version numbers (no prose)
// and returns it as submitted, trimmed (docs/api/records.md): clients compare
// what they sent with what comes back.
func versions(s string) (string, error) {
	parts := strings.Split(s, ",")
	if len(parts) > maxVersions {
		return "", Invalid("version_info", "lists more than %d versions", maxVersions)
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return "", Invalid("version_info", "has an empty entry: list versions separated by commas")
		}
		if !versionRe.MatchString(p) {
			return "", Invalid("version_info", "%q is not a version number: list affected versions only, comma-separated; context belongs in threat_description", p)
		}
	}
	return strings.TrimSpace(s), nil
}

// isoLayouts are the ISO 8601 forms accepted for timestamps; without a zone
// the time is taken as UTC.
var isoLayouts = []string{
	time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02",
}

// ParseTimestamp parses an ISO 8601 timestamp into UTC.
func ParseTimestamp(field, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range isoLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC().Truncate(time.Microsecond), nil
		}
	}
	return time.Time{}, Invalid(field, "%q is not an ISO 8601 timestamp (e.g. 2025-01-31T12:00:00Z)", s)
}

func timestamp(field string, p *string, now time.Time) (*time.Time, error) {
	if !present(p) {
		return nil, nil
	}
	t, err := ParseTimestamp(field, *p)
	if err != nil {
		return nil, err
	}
	if t.After(now.Add(24 * time.Hour)) {
		return nil, Invalid(field, "%s is in the future", t.Format(time.RFC3339))
	}
	if t.Year() < 1990 {
		return nil, Invalid(field, "%s is before 1990", t.Format(time.RFC3339))
	}
	return &t, nil
}

// DuplicateIdentifier is what a 409 names: the package name for packages,
// the canonical identifier for everything else.
func (t Threat) DuplicateIdentifier() string {
	if t.ReportType == TypePackage {
		if t.Details.PackageName != "" {
			return t.Details.PackageName
		}
		return t.ResourceIdentifier
	}
	_, c, _ := strings.Cut(t.CanonicalKey, ":")
	return c
}

// String describes a threat for logs and the CLI.
func (t Threat) String() string {
	reg := ""
	if t.Registry != "" {
		reg = " (" + t.Registry + ")"
	}
	return fmt.Sprintf("%s %s %s%s", t.ID, t.ReportType, t.ResourceIdentifier, reg)
}

// ValidVersion reports whether v is acceptable in version_info.
func ValidVersion(v string) bool { return versionRe.MatchString(v) }
