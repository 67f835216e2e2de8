package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// testCampaigns: campaigns of verified reports, changed and read, their
// first and last seen from their reports; every report's campaigns; the
// groups of a shared indicator and every verified report's texts, which
// suggestions read.
func testCampaigns(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "camp@example.com")
	var ids []string
	for i := range 4 {
		th := report(t, u.ID, core.TypePackage, "npm", fmt.Sprintf("worm-%d", i))
		th.Details.PayloadDescription = "Posts tokens to hxxps://c2[.]worm[.]example/collect"
		th.Details.Tags = []string{"campaign:shai-hulud"}
		th = core.Derive(th)
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}
	for _, id := range ids[:3] {
		verify(t, s, id, now())
	}
	n := ptr("Shai-Hulud")
	camp, err := community.NewCampaign(community.CampaignRequest{Name: n, Description: ptr("An npm worm"), Tags: &[]string{"worm"}, Add: ids[:2]}, "Rita", now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateCampaign(c, camp); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetCampaign(c, camp.ID)
	if err != nil || got.Name != "Shai-Hulud" || len(got.ThreatIDs) != 2 || got.FirstSeen == nil || got.LastSeen == nil || !slices.Equal(got.Tags, []string{"worm"}) {
		t.Fatalf("campaign: %+v %v", got, err)
	}
	// A pending report cannot join; nothing else of the change applies.
	ch, _ := community.NewCampaignChange(camp.ID, community.CampaignRequest{Name: ptr("Renamed"), Add: []string{ids[3]}}, now())
	if _, err := s.UpdateCampaign(c, ch); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("adding a pending report: %v", err)
	}
	if got, _ := s.GetCampaign(c, camp.ID); got.Name != "Shai-Hulud" {
		t.Fatalf("a refused change applied: %+v", got)
	}
	ch, _ = community.NewCampaignChange(camp.ID, community.CampaignRequest{Name: ptr("Shai-Hulud 2"), Add: []string{ids[2], ids[0]}, Remove: []string{ids[1]}}, now())
	got, err = s.UpdateCampaign(c, ch)
	if err != nil || got.Name != "Shai-Hulud 2" || len(got.ThreatIDs) != 2 || slices.Contains(got.ThreatIDs, ids[1]) {
		t.Fatalf("change: %+v %v", got, err)
	}
	if _, err := s.GetCampaign(c, "6b1e5b47-0000-4000-8000-000000000000"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("an unknown campaign: %v", err)
	}
	other, _ := community.NewCampaign(community.CampaignRequest{Name: ptr("Another")}, "Rita", now())
	if err := s.CreateCampaign(c, other); err != nil {
		t.Fatal(err)
	}
	page, err := s.ListCampaigns(c, community.CampaignQuery{Limit: 1})
	if err != nil || len(page) != 1 || page[0].Name != "Another" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	page, err = s.ListCampaigns(c, community.CampaignQuery{AfterName: page[0].Name, AfterID: page[0].ID, Limit: 5})
	if err != nil || len(page) != 1 || page[0].ID != camp.ID || len(page[0].ThreatIDs) != 2 {
		t.Fatalf("second page: %+v %v", page, err)
	}
	members, err := s.CampaignMembers(c)
	if err != nil || len(members) != 2 {
		t.Fatalf("members: %+v %v", members, err)
	}
	for _, m := range members {
		if m.Ref.ID != camp.ID || m.Ref.Name != "Shai-Hulud 2" || m.Ref.Description != "An npm worm" || m.Ref.UpdatedAt.IsZero() {
			t.Fatalf("member: %+v", m)
		}
	}
	// What suggestions read: the three verified reports share the URL,
	// the domain and the tag.
	groups, err := s.SharedIndicatorGroups(c, community.IndicatorGroupQuery{MinSize: 2, MaxSize: 10, Limit: 10})
	if err != nil || len(groups) == 0 {
		t.Fatalf("indicator groups: %+v %v", groups, err)
	}
	for _, g := range groups {
		if len(g.ThreatIDs) != 3 || slices.Contains(g.ThreatIDs, ids[3]) {
			t.Fatalf("group %s: %v (the pending report is not in any)", g.Key, g.ThreatIDs)
		}
	}
	if small, _ := s.SharedIndicatorGroups(c, community.IndicatorGroupQuery{MinSize: 2, MaxSize: 2, Limit: 10}); len(small) != 0 {
		t.Fatalf("groups of at most 2: %+v", small)
	}
	texts := 0
	if err := s.EachVerifiedText(c, func(batch []community.ReportText) error {
		for _, r := range batch {
			texts++
			if !slices.Contains(ids[:3], r.ID) || !slices.Equal(r.Tags, []string{"campaign:shai-hulud"}) || r.PayloadDescription == "" || r.ResourceIdentifier == "" {
				t.Fatalf("text: %+v", r)
			}
		}
		return nil
	}); err != nil || texts != 3 {
		t.Fatalf("%d texts, %v", texts, err)
	}
}
