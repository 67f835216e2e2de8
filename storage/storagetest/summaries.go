package storagetest

import (
	"testing"

	"github.com/threatd/threatd/core"
)

// testSummaryOf: the summaries the start-up load streams
// (EachVerifiedSummary, read from columns) are what core.SummaryOf, the one
// definition, makes of each verified report as GetThreat returns it: for
// packages with a version list and with every version affected, and for
// other kinds; pending reports are left out.
func testSummaryOf(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "summary@example.com")
	var verified []string
	listed := report(t, u.ID, core.TypePackage, core.RegistryPyPI, "summary-listed")
	listed.Details.VersionInfo = "1.0.0, 1.0.1"
	url := report(t, u.ID, core.TypeURL, "", "https://summary.example/payload")
	pending := report(t, u.ID, core.TypeIP, "", "192.0.2.77")
	for _, th := range []core.Threat{listed, url, pending} {
		create(t, s, th)
	}
	for _, th := range []core.Threat{listed, url} {
		verify(t, s, th.ID, now())
		verified = append(verified, th.ID)
	}
	every := report(t, "", core.TypePackage, core.RegistryNPM, "summary-every")
	every.Details.VersionInfo, every.AllVersions, every.Source, every.UpstreamID = "0.1.0", true, "osv", "MAL-SUMMARY-1"
	some := report(t, "", core.TypePackage, core.RegistryNPM, "summary-some")
	some.Details.VersionInfo, some.Source, some.UpstreamID = "2.0.0", "osv", "MAL-SUMMARY-2"
	out, err := s.ImportThreats(c, core.ImportBatch{Records: []core.ImportRecord{{Threat: core.Derive(every)}, {Threat: core.Derive(some)}}, Actor: "osv-import"})
	if err != nil || len(out) != 2 {
		t.Fatalf("import: %+v %v", out, err)
	}
	for _, o := range out {
		verified = append(verified, o.ThreatID)
	}

	got := map[string]core.Summary{}
	if err := s.EachVerifiedSummary(c, func(batch []core.Summary) error {
		for _, sum := range batch {
			got[sum.ID] = sum
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(verified) {
		t.Fatalf("%d summaries, want %d (the verified reports): %+v", len(got), len(verified), got)
	}
	for _, id := range verified {
		th, err := s.GetThreat(c, id)
		if err != nil {
			t.Fatal(err)
		}
		want, have := core.SummaryOf(th), got[id]
		if !have.VerifiedAt.Equal(want.VerifiedAt) || want.VerifiedAt.IsZero() {
			t.Errorf("%s: verified at %v, SummaryOf says %v", th.CanonicalKey, have.VerifiedAt, want.VerifiedAt)
		}
		have.VerifiedAt = want.VerifiedAt
		if have != want {
			t.Errorf("%s: streamed %+v\nSummaryOf    %+v", th.CanonicalKey, have, want)
		}
	}
}
