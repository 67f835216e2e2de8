package community

import (
	"context"
	"time"

	"github.com/threatd/threatd/core"
)

// NotReviewer refuses a campaign change by a user who may not make it
// (errors.Is core.ErrForbidden).
type NotReviewer struct{}

func (NotReviewer) Error() string { return "only reviewers and administrators may change campaigns" }

// Is makes errors.Is(err, core.ErrForbidden) true.
func (NotReviewer) Is(target error) bool { return target == core.ErrForbidden }

// Operator is who the command line acts as: the operator of the database,
// who may change campaigns and signs them as the system reviewer.
var Operator = core.User{Name: core.SystemReviewer, Role: core.RoleAdmin}

// Campaigns creates and changes campaigns (docs/campaigns.md): the one use
// case the API, the web site and the command line call, with who may and
// what a campaign may hold checked here.
type Campaigns struct {
	Store CampaignStore
	// Changed, when set, hears of each stored change (the daemon's records
	// name the campaigns as they are now; the others read them within a
	// minute).
	Changed func(ctx context.Context)
}

// Create stores a new campaign by, from req (Add its first reports,
// verified ones), and returns it as stored.
func (cs Campaigns) Create(ctx context.Context, by core.User, req CampaignRequest) (Campaign, error) {
	if !by.Role.CanReview() {
		return Campaign{}, NotReviewer{}
	}
	camp, err := NewCampaign(req, by.Name, time.Now())
	if err != nil {
		return Campaign{}, err
	}
	if err := cs.Store.CreateCampaign(ctx, camp); err != nil {
		return Campaign{}, err
	}
	cs.changed(ctx)
	return cs.Store.GetCampaign(ctx, camp.ID)
}

// Update changes the campaign id by req (its name, description, tags,
// reports added and removed) and returns it as stored.
func (cs Campaigns) Update(ctx context.Context, by core.User, id string, req CampaignRequest) (Campaign, error) {
	if !by.Role.CanReview() {
		return Campaign{}, NotReviewer{}
	}
	ch, err := NewCampaignChange(id, req, time.Now())
	if err != nil {
		return Campaign{}, err
	}
	camp, err := cs.Store.UpdateCampaign(ctx, ch)
	if err != nil {
		return Campaign{}, err
	}
	cs.changed(ctx)
	return camp, nil
}

func (cs Campaigns) changed(ctx context.Context) {
	if cs.Changed != nil {
		cs.Changed(ctx)
	}
}
