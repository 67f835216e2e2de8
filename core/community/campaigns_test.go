package community_test

import (
	"context"
	"errors"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/storage/storagetest"
)

// The one campaign use case over a real SQLite store: who may, what is
// checked, what is stored, and who hears of it.
func TestCampaignsUseCase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	changed := 0
	cs := community.Campaigns{Store: st, Changed: func(context.Context) { changed++ }}
	name, desc := "Wormy", "A worm of npm tokens"
	req := community.CampaignRequest{Name: &name, Description: &desc}

	submitter := core.User{Name: "Sam", Role: core.RoleSubmitter}
	if _, err := cs.Create(ctx, submitter, req); !errors.Is(err, core.ErrForbidden) || err.Error() != "only reviewers and administrators may change campaigns" {
		t.Fatalf("a submitter creates a campaign: %v", err)
	}
	if _, err := cs.Create(ctx, core.User{Role: core.RoleReviewer}, community.CampaignRequest{}); err == nil {
		t.Fatal("a campaign without a name was made")
	}
	if _, err := cs.Create(ctx, core.User{Role: core.RoleReviewer}, community.CampaignRequest{Name: &name, Add: []string{"not-a-report"}}); err == nil {
		t.Fatal("a campaign of an unknown report was made")
	}
	if changed != 0 {
		t.Fatalf("refused changes were told: %d", changed)
	}
	camp, err := cs.Create(ctx, core.User{Name: "Rita", Role: core.RoleReviewer}, req)
	if err != nil || camp.ID == "" || camp.Name != name || camp.Description != desc || changed != 1 {
		t.Fatalf("create: %+v %v (told %d)", camp, err, changed)
	}
	if _, err := cs.Update(ctx, submitter, camp.ID, req); !errors.Is(err, core.ErrForbidden) {
		t.Fatalf("a submitter changes a campaign: %v", err)
	}
	other := "Wormy 2"
	got, err := cs.Update(ctx, community.Operator, camp.ID, community.CampaignRequest{Name: &other})
	if err != nil || got.Name != other || got.Description != desc || changed != 2 {
		t.Fatalf("update by the operator: %+v %v (told %d)", got, err, changed)
	}
	var nf *core.NotFoundError
	if _, err := cs.Update(ctx, community.Operator, "00000000-0000-4000-8000-000000000000", community.CampaignRequest{Name: &other}); !errors.As(err, &nf) {
		t.Fatalf("an unknown campaign: %v", err)
	}
}
