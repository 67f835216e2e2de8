package api

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/threatd/threatd/core"
)

// FuzzSubmit feeds arbitrary bodies through the submit decoder and validator.
// Properties: never panic; every rejection is a 400-class error that names
// the problem; every accepted report has a canonical key that is stable
// (re-normalising its canonical identifier gives the same key) and text
// fields that are valid UTF-8.
func FuzzSubmit(f *testing.F) {
	seeds := []string{
		`{"report_type":"package","resource_identifier":"@Scope/LoDash","registry":"npm","threat_description":"x"}`,
		`{"report_type":"package","resource_identifier":"Requests_Toolbelt","registry":"PyPI","threat_description":"x","package_name":"requests.toolbelt"}`,
		`{"report_type":"url","resource_identifier":"HTTPS://Bücher.example:443/a?b#c","threat_description":"x"}`,
		`{"report_type":"domain","resource_identifier":"xn--bcher-kva.example.","threat_description":"x"}`,
		`{"report_type":"ip","resource_identifier":"::ffff:192.0.2.1","threat_description":"x","download_count":12}`,
		`{"report_type":"repository","resource_identifier":"GitHub.com/a/b.git/","threat_description":"x"}`,
		`{"report_type":"container","resource_identifier":"nginx@sha256:aa00000000000000000000000000000000","threat_description":"x"}`,
		`{"report_type":"wallet","resource_identifier":"0xAbCdEf0123456789aBcDeF0123456789AbCdEf01","threat_description":"x"}`,
		`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","first_seen":"2026-01-01","last_seen":"2026-01-02T00:00:00+01:00","version_info":"1.0, 2.0","tags":["a"],"evidence_references":"https://a.example|https://b.example"}`,
		`{"report_type":"package","resource_identifier":"g:a","registry":"maven","threat_description":"x","download_count":1e3}`,
		`{}`, `[]`, `{"a":`, `null`, `"str"`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		var sub core.Submission
		err := decodeBody(body, &sub)
		var th core.Threat
		if err == nil {
			th, err = core.NewThreat(sub, now)
		}
		if err != nil {
			e := toHTTPError(err, 1<<20)
			if e.Status != 400 || e.Message == "" {
				t.Fatalf("rejection is %d %q (from %v)", e.Status, e.Message, err)
			}
			var fe *core.FieldError
			if errors.As(err, &fe) && fe.Field != "" && !strings.HasPrefix(e.Message, fe.Field+": ") {
				t.Fatalf("field error %q does not name %s first", e.Message, fe.Field)
			}
			return
		}
		typ, rest, _ := strings.Cut(th.CanonicalKey, ":")
		if typ != string(th.ReportType) || rest == "" {
			t.Fatalf("key %q for type %s", th.CanonicalKey, th.ReportType)
		}
		ident := rest
		if th.ReportType == core.TypePackage {
			_, ident, _ = strings.Cut(rest, ":")
		}
		again, err := core.CanonicalKey(th.ReportType, th.Registry, ident)
		if err != nil || again != th.CanonicalKey {
			t.Fatalf("canonical key not stable: %q → %q (%v)", th.CanonicalKey, again, err)
		}
		for _, s := range []string{th.ResourceIdentifier, th.Details.ThreatDescription, th.Details.PayloadDescription, th.Details.Publisher} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 accepted: %q", s)
			}
		}
	})
}
