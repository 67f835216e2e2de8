package storagetest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// testDerivedIndicators: a store keeps the indicators the daemon derived
// (core.Derive) with the content it writes, returns them with the report,
// and publishes exactly those (STIX object ids, the indicator look-up); it
// works none out itself; GetThreats, the record cache's read, leaves them
// out. A change merged onto a content version the report
// has left is refused with ErrStale, one without a version with
// ErrInvalid. GetRevision reads one revision.
func testDerivedIndicators(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "derived@example.com")
	th := report(t, u.ID, core.TypePackage, core.RegistryNPM, "derived-pkg")
	th.Details.PayloadDescription = "Downloads hxxps://stage2.derived-evil[.]example/p.sh"
	th = core.Derive(th)
	if len(th.IOCs) < 2 {
		t.Fatalf("derived %+v, want the asset and the URL", th.IOCs)
	}
	create(t, s, th)
	got, err := s.GetThreat(c, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.IOCs, th.IOCs) {
		t.Fatalf("stored indicators:\n%+v\nwant\n%+v", got.IOCs, th.IOCs)
	}
	verify(t, s, th.ID, now())
	domain := ioc.Key(ioc.Domain, "stage2.derived-evil.example")
	list, err := s.QueryThreats(c, core.ThreatQuery{IndicatorKey: domain, Limit: 10})
	if err != nil || len(list) != 1 || list[0].ID != th.ID || !reflect.DeepEqual(list[0].IOCs, th.IOCs) {
		t.Fatalf("indicator look-up: %+v %v", list, err)
	}
	// The feed (TAXII, MISP) returns them; GetThreats (the record cache's
	// read) does not.
	var fed bool
	for _, it := range feedAll(t, s, core.FeedQuery{Latest: true}) {
		if it.Threat.ID == th.ID {
			fed = reflect.DeepEqual(it.Threat.IOCs, th.IOCs)
		}
	}
	if !fed {
		t.Fatal("the feed lacks the report or its indicators")
	}
	if many, err := s.GetThreats(c, []string{th.ID}); err != nil || len(many) != 1 || many[0].IOCs != nil {
		t.Fatalf("GetThreats: %+v %v", many, err)
	}
	// GetThreatsWithIOCs (the spill's fill, and the block lists with it)
	// does, with the rest of GetThreats' answer.
	full, err := s.GetThreatsWithIOCs(c, []string{th.ID, uuid.NewString()})
	if err != nil || len(full) != 1 || full[0].ID != th.ID || !reflect.DeepEqual(full[0].IOCs, th.IOCs) || full[0].Details.ThreatDescription != th.Details.ThreatDescription {
		t.Fatalf("GetThreatsWithIOCs: %+v %v", full, err)
	}
	if _, err := s.GetThreatsWithIOCs(c, make([]string, core.MaxGetThreats+1)); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("GetThreatsWithIOCs of %d ids: %v", core.MaxGetThreats+1, err)
	}

	// The owner changes it as the daemon would, but with indicators the
	// store could not work out from the text: it keeps what it is given.
	pending := report(t, u.ID, core.TypePackage, core.RegistryNPM, "derived-pending")
	create(t, s, pending)
	cur, err := s.GetThreat(c, pending.ID)
	if err != nil {
		t.Fatal(err)
	}
	given := []ioc.IOC{{Type: ioc.Domain, Value: "given.derived.example", Origin: ioc.OriginPayload, Confidence: ioc.ConfidenceMedium}}
	patch := core.Patch{Submission: core.Submission{Publisher: ptr("someone")}}
	if _, err := s.ModifyThreat(c, core.Modification{ThreatID: pending.ID, AuthorID: u.ID, AuthorName: u.Name, Patch: patch,
		BaseRevision: cur.Revision, At: now(), Version: cur.Version, IOCs: given, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	changed, err := s.GetThreat(c, pending.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(changed.IOCs, given) || changed.Version != cur.Version+1 {
		t.Fatalf("after the change: version %d, indicators %+v; want %d, %+v", changed.Version, changed.IOCs, cur.Version+1, given)
	}
	// Merged onto the version before: refused, nothing written.
	_, err = s.ModifyThreat(c, core.Modification{ThreatID: pending.ID, AuthorID: u.ID, AuthorName: u.Name, Patch: patch,
		BaseRevision: changed.Revision, At: now(), Version: cur.Version, IOCs: nil, Policy: noLimits})
	if !errors.Is(err, core.ErrStale) {
		t.Fatalf("a change merged onto an old version: %v, want ErrStale", err)
	}
	// Without a version: refused, not applied with no indicators.
	_, err = s.ModifyThreat(c, core.Modification{ThreatID: pending.ID, AuthorID: u.ID, AuthorName: u.Name, Patch: patch,
		BaseRevision: changed.Revision, At: now(), Policy: noLimits})
	if !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("an applied change without a version: %v, want ErrInvalid", err)
	}
	if again, err := s.GetThreat(c, pending.ID); err != nil || again.Version != changed.Version || !reflect.DeepEqual(again.IOCs, given) {
		t.Fatalf("after the refused change: %+v %v", again, err)
	}

	// A reviewer's approval merged onto an old version is refused too.
	other := user(t, s, "derived-other@example.com")
	mod, err := s.ModifyThreat(c, core.Modification{ThreatID: th.ID, AuthorID: other.ID, AuthorName: other.Name, Patch: patch,
		BaseRevision: got.Revision, At: now(), Policy: noLimits})
	rev := mod.Revision
	if err != nil || rev.State != core.RevisionPending {
		t.Fatalf("proposal: %+v %v", rev, err)
	}
	read, err := s.GetRevision(c, rev.ID)
	if err != nil || read.ID != rev.ID || read.ThreatID != th.ID || read.State != core.RevisionPending || read.Patch.Publisher == nil {
		t.Fatalf("GetRevision: %+v %v", read, err)
	}
	for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
		if _, err := s.GetRevision(c, id); !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("GetRevision(%q): %v, want ErrNotFound", id, err)
		}
	}
	if _, err := s.DecideRevision(c, core.RevisionDecision{RevisionID: rev.ID, Approve: true, ActorName: "Rita", At: now(),
		Version: got.Version + 5, IOCs: given}); !errors.Is(err, core.ErrStale) {
		t.Fatalf("an approval merged onto another version: %v, want ErrStale", err)
	}
	if _, err := s.DecideRevision(c, core.RevisionDecision{RevisionID: rev.ID, Approve: true, ActorName: "Rita", At: now(),
		Version: got.Version, IOCs: given}); err != nil {
		t.Fatal(err)
	}
	// Published now with the given indicators only: the URL's domain is
	// no longer listed, the given one is.
	if list, err := s.QueryThreats(c, core.ThreatQuery{IndicatorKey: domain, Limit: 10}); err != nil || len(list) != 0 {
		t.Fatalf("the old indicator after the approval: %v %v", list, err)
	}
	if list, err := s.QueryThreats(c, core.ThreatQuery{IndicatorKey: ioc.Key(ioc.Domain, "given.derived.example"), Limit: 10}); err != nil || len(list) != 1 || list[0].ID != th.ID {
		t.Fatalf("the given indicator after the approval: %v %v", list, err)
	}
}
