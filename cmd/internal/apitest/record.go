package apitest

import "testing"

// recordFields are the fields every record carries (docs/api/records.md).
var RecordFields = []string{"id", "status", "severity_level", "description", "tags", "first_seen", "last_seen",
	"report_type", "resource_identifier", "created_at", "verified_at", "verified_by", "threat_description",
	"payload_description", "package_name", "registry", "publisher", "version_info", "evidence_references",
	"osv_advisory_url", "contributors", "download_count"}

// CheckRecord fails t unless rec is a record as the API documents it: every
// field present, the lists lists, description the threat description.
func CheckRecord(t testing.TB, rec map[string]any) {
	t.Helper()
	for _, f := range RecordFields {
		if _, ok := rec[f]; !ok {
			t.Fatalf("record lacks %q: %v", f, rec)
		}
	}
	for _, f := range []string{"tags", "contributors"} {
		if _, ok := rec[f].([]any); !ok {
			t.Fatalf("%s is %v, want an array", f, rec[f])
		}
	}
	if rec["description"] != rec["threat_description"] {
		t.Fatalf("description %q differs from threat_description %q", rec["description"], rec["threat_description"])
	}
}
