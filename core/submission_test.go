package core

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func sp(s string) *string { return &s }

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func validPackage() Submission {
	return Submission{ReportType: sp("package"), ResourceIdentifier: sp("Evil-Pkg"), Registry: sp("npm"), ThreatDescription: sp("Steals npm tokens on install")}
}

func TestNewThreatFull(t *testing.T) {
	s := validPackage()
	s.PackageName = sp("evil-pkg")
	s.Publisher = sp("mallory")
	payload := "## Payload\n\nPosts `~/.npmrc` to hxxps://exfil[.]example[.]com/x from 203[.]0[.]113[.]7\n"
	s.PayloadDescription = sp(payload)
	s.SeverityLevel = sp("High")
	s.EvidenceReferences = sp("https://a.example/1 | https://b.example/2")
	s.ContactEmail = sp("r@example.org")
	s.Tags = []string{"token-stealer", " campaign-x "}
	s.VersionInfo = sp("1.0.0,1.0.1 , 2.0.0-beta.1")
	s.FirstSeen = sp("2026-11-01")
	s.LastSeen = sp("2026-11-02T10:00:00+02:00")
	s.OSVAdvisoryURL = sp("https://osv.dev/vulnerability/MAL-2026-1")
	s.Contributors = []string{"alice"}
	var n int64 = 1234
	s.DownloadCount = &n
	th, err := NewThreat(s, now)
	if err != nil {
		t.Fatal(err)
	}
	d := th.Details
	if th.ReportType != TypePackage || th.Registry != "npm" || th.CanonicalKey != "package:npm:evil-pkg" || th.ResourceIdentifier != "Evil-Pkg" {
		t.Fatalf("identity: %+v", th)
	}
	if d.PackageName != "evil-pkg" || d.Publisher != "mallory" || d.SeverityLevel != SeverityHigh || d.PayloadDescription != payload {
		t.Fatalf("details: %+v", d)
	}
	if d.EvidenceReferences != "https://a.example/1|https://b.example/2" || d.VersionInfo != "1.0.0,1.0.1 , 2.0.0-beta.1" { // version_info as submitted, trimmed (docs/api/records.md)
		t.Fatalf("lists: %q %q", d.EvidenceReferences, d.VersionInfo)
	}
	if strings.Join(d.Tags, ",") != "token-stealer,campaign-x" || *d.DownloadCount != 1234 || d.Contributors[0] != "alice" {
		t.Fatalf("arrays: %+v", d)
	}
	if !d.FirstSeen.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) || !d.LastSeen.Equal(time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)) {
		t.Fatalf("times: %v %v", d.FirstSeen, d.LastSeen)
	}
}

func TestNewThreatDefaults(t *testing.T) {
	th, err := NewThreat(validPackage(), now)
	if err != nil {
		t.Fatal(err)
	}
	if th.Details.PackageName != "Evil-Pkg" || th.Details.Tags == nil || th.Details.Contributors == nil {
		t.Fatalf("package_name must default to resource_identifier, arrays to []: %+v", th.Details)
	}
	c, err := NewThreat(Submission{ReportType: sp("container"), ResourceIdentifier: sp("ghcr.io/evil/x"), ThreatDescription: sp("x")}, now)
	if err != nil || c.Registry != "ghcr" {
		t.Fatalf("container registry from host: %+v %v", c, err)
	}
}

func TestRequiredFields(t *testing.T) {
	for _, s := range []Submission{{}, {ReportType: sp("url")}, {ReportType: sp("url"), ResourceIdentifier: sp("https://x.example/"), ThreatDescription: sp("   ")}} {
		_, err := NewThreat(s, now)
		var rf *RequiredFieldsError
		if !errors.As(err, &rf) || err.Error() != "report_type, resource_identifier and threat_description are required" || len(rf.Missing) == 0 {
			t.Errorf("%+v: got %v", s, err)
		}
	}
	_, err := NewThreat(Submission{ReportType: sp("url")}, now)
	if rf := err.(*RequiredFieldsError); strings.Join(rf.Missing, ",") != "resource_identifier,threat_description" {
		t.Fatalf("missing = %v", rf.Missing)
	}
}

func TestFieldValidation(t *testing.T) {
	neg := int64(-1)
	cases := []struct {
		field string
		mod   func(*Submission)
	}{
		{"report_type", func(s *Submission) { s.ReportType = sp("malware") }},
		{"report_type", func(s *Submission) { s.ReportType = sp("Package") }},
		{"registry", func(s *Submission) { s.Registry = nil }},
		{"registry", func(s *Submission) { s.Registry = sp("cpan") }},
		{"registry", func(s *Submission) { s.Registry = sp("dockerhub") }},
		{"resource_identifier", func(s *Submission) { s.ResourceIdentifier = sp("bad name") }},
		{"package_name", func(s *Submission) { s.PackageName = sp("other-pkg") }},
		{"severity_level", func(s *Submission) { s.SeverityLevel = sp("severe") }},
		{"evidence_references", func(s *Submission) { s.EvidenceReferences = sp("https://a.example/||https://b.example/") }},
		{"evidence_references", func(s *Submission) { s.EvidenceReferences = sp("see the blog post") }},
		{"evidence_references", func(s *Submission) { s.EvidenceReferences = sp("ftp://a.example/x") }},
		{"contact_email", func(s *Submission) { s.ContactEmail = sp("not an email") }},
		{"tags", func(s *Submission) { s.Tags = []string{"ok", ""} }},
		{"tags", func(s *Submission) { s.Tags = make([]string, 51) }},
		{"tags", func(s *Submission) { s.Tags = []string{"line\nbreak"} }},
		{"version_info", func(s *Submission) { s.VersionInfo = sp("all versions before 2.0") }},
		{"version_info", func(s *Submission) { s.VersionInfo = sp("1.0,,2.0") }},
		{"first_seen", func(s *Submission) { s.FirstSeen = sp("yesterday") }},
		{"first_seen", func(s *Submission) { s.FirstSeen = sp("2031-01-01T00:00:00Z") }},
		{"last_seen", func(s *Submission) { s.FirstSeen, s.LastSeen = sp("2026-11-02"), sp("2026-11-01") }},
		{"osv_advisory_url", func(s *Submission) { s.OSVAdvisoryURL = sp("osv.dev/MAL-1") }},
		{"contributors", func(s *Submission) { s.Contributors = []string{" "} }},
		{"download_count", func(s *Submission) { s.DownloadCount = &neg }},
		{"threat_description", func(s *Submission) { s.ThreatDescription = sp(strings.Repeat("x", 20001)) }},
		{"threat_description", func(s *Submission) { s.ThreatDescription = sp("bad\x00byte") }},
		{"publisher", func(s *Submission) { s.Publisher = sp("two\nlines") }},
	}
	for _, c := range cases {
		s := validPackage()
		c.mod(&s)
		_, err := NewThreat(s, now)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("want an error on %s, got %v", c.field, err)
		}
	}
}

func TestCapAndHourlyMessages(t *testing.T) {
	c := &NewUserCapError{Verified: 1, Unverified: 3, MaxUnverified: 3, VerifiedToLift: 3}
	if !strings.Contains(c.Error(), "at most 3 unverified reports") || !strings.Contains(c.Error(), "until 3 of your reports are verified") || !errors.Is(c, ErrForbidden) {
		t.Fatal(c.Error())
	}
	h := &HourlyLimitError{Limit: 10}
	if h.Error() != "Submission limit exceeded: the maximum is 10 submissions per hour" || !errors.Is(h, ErrLimit) {
		t.Fatal(h.Error())
	}
}

func TestHourlyLimitFor(t *testing.T) {
	r := NewReports(nil, Limits{SubmissionsPerHour: 10, SubmissionsPerHourPaid: 0})
	own := 50
	if r.HourlyLimit(User{Tier: TierFree}) != 10 || r.HourlyLimit(User{Tier: TierPaid}) != 0 || r.HourlyLimit(User{Tier: TierFree, SubmissionsPerHour: &own}) != 50 {
		t.Fatal("hourly limit selection wrong")
	}
}

// TestFieldsCheckedByType: fields without a rule of their own get the
// checks of their type, naming the field.
func TestFieldsCheckedByType(t *testing.T) {
	neg := int64(-1)
	for _, c := range []struct {
		edit func(*Submission)
		want string
	}{
		{func(s *Submission) { s.Publisher = sp(strings.Repeat("x", 257)) }, "publisher: is longer than 256 characters (257)"},
		{func(s *Submission) { s.Publisher = sp("a\nb") }, "publisher: must be a single line"},
		{func(s *Submission) { s.Contributors = make([]string, 101) }, "contributors: has more than 100 entries"},
		{func(s *Submission) { s.Contributors = []string{"a", " "} }, "contributors: entry 1 is empty"},
		{func(s *Submission) { s.DownloadCount = &neg }, "download_count: must not be negative"},
		{func(s *Submission) { s.FirstSeen = sp("2099-01-01") }, "first_seen: 2099-01-01T00:00:00Z is in the future"},
		{func(s *Submission) { s.FirstSeen = sp("yesterday") }, `first_seen: "yesterday" is not an ISO 8601 timestamp (e.g. 2025-01-31T12:00:00Z)`},
	} {
		s := validPackage()
		c.edit(&s)
		_, err := NewThreat(s, now)
		if err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}
