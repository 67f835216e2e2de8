package community

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Bounds of a campaign.
const (
	MaxCampaignName        = 200
	MaxCampaignDescription = 10_000
	MaxCampaignTags        = 50
	// MaxCampaignChange bounds the reports one change adds or removes.
	MaxCampaignChange = 1000
	// MaxCampaignReports bounds a campaign's reports.
	MaxCampaignReports = 10_000
)

// Campaign is a named group of related verified reports (docs/campaigns.md).
// FirstSeen and LastSeen are worked out from its reports: the earliest of
// their first_seen (their verification when they have none), the latest
// of their last_seen (likewise).
type Campaign struct {
	ID          string
	Name        string
	Description string
	Tags        []string
	ThreatIDs   []string
	FirstSeen   *time.Time
	LastSeen    *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CreatedBy   string
}

// Ref is the campaign as a record names it.
func (c Campaign) Ref() core.CampaignRef {
	return core.CampaignRef{ID: c.ID, Name: c.Name}
}

// CampaignRequest is a campaign as a reviewer sends it: a new one
// (POST /campaigns, threatd campaign create) or a change (PATCH), where
// nil leaves a field as it is.
type CampaignRequest struct {
	Name, Description *string
	Tags              *[]string
	// Add and Remove name reports to add and remove.
	Add, Remove []string
}

// CampaignChange is a validated change of campaign ID: Tags replace its
// tags when SetTags.
type CampaignChange struct {
	ID                string
	Name, Description *string
	Tags              []string
	SetTags           bool
	Add, Remove       []string
	At                time.Time
}

// NewCampaign validates a new campaign, field by field.
func NewCampaign(r CampaignRequest, createdBy string, now time.Time) (Campaign, error) {
	if r.Name == nil {
		return Campaign{}, core.Invalid("name", "is required")
	}
	if len(r.Remove) > 0 {
		return Campaign{}, core.Invalid("remove_threat_ids", "a new campaign has no reports to remove")
	}
	ch, err := validCampaign(r)
	if err != nil {
		return Campaign{}, err
	}
	c := Campaign{ID: uuid.NewString(), Name: *ch.Name, Tags: []string{}, ThreatIDs: ch.Add, CreatedAt: now.UTC(), UpdatedAt: now.UTC(), CreatedBy: createdBy}
	if ch.Description != nil {
		c.Description = *ch.Description
	}
	if ch.SetTags {
		c.Tags = ch.Tags
	}
	return c, nil
}

// NewCampaignChange validates a change of campaign id.
func NewCampaignChange(id string, r CampaignRequest, now time.Time) (CampaignChange, error) {
	if _, err := uuid.Parse(id); err != nil {
		return CampaignChange{}, core.NotFound("campaign", id)
	}
	ch, err := validCampaign(r)
	if err != nil {
		return CampaignChange{}, err
	}
	if ch.Name == nil && ch.Description == nil && !ch.SetTags && len(ch.Add) == 0 && len(ch.Remove) == 0 {
		return CampaignChange{}, core.Invalid("body", "changes nothing: give name, description, tags, add_threat_ids or remove_threat_ids")
	}
	ch.ID, ch.At = id, now.UTC()
	return ch, nil
}

func validCampaign(r CampaignRequest) (CampaignChange, error) {
	var ch CampaignChange
	if r.Name != nil {
		name := strings.Join(strings.Fields(*r.Name), " ")
		if name == "" {
			return ch, core.Invalid("name", "is empty")
		}
		if err := core.ValidateText("name", name, MaxCampaignName); err != nil {
			return ch, err
		}
		ch.Name = &name
	}
	if r.Description != nil {
		d := strings.TrimSpace(*r.Description)
		if err := core.ValidateText("description", d, MaxCampaignDescription); err != nil {
			return ch, err
		}
		ch.Description = &d
	}
	if r.Tags != nil {
		tags, err := core.Tags("tags", *r.Tags, MaxCampaignTags)
		if err != nil {
			return ch, err
		}
		ch.Tags, ch.SetTags = tags, true
	}
	var err error
	if ch.Add, err = campaignIDs("add_threat_ids", r.Add); err != nil {
		return ch, err
	}
	if ch.Remove, err = campaignIDs("remove_threat_ids", r.Remove); err != nil {
		return ch, err
	}
	for _, id := range ch.Add {
		if slices.Contains(ch.Remove, id) {
			return ch, core.Invalid("remove_threat_ids", "%s is also in add_threat_ids", id)
		}
	}
	return ch, nil
}

// campaignIDs validates a list of report ids, without repeats.
func campaignIDs(field string, ids []string) ([]string, error) {
	if len(ids) > MaxCampaignChange {
		return nil, core.Invalid(field, "at most %d reports at once (got %d)", MaxCampaignChange, len(ids))
	}
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		u, err := uuid.Parse(strings.TrimSpace(id))
		if err != nil {
			return nil, core.Invalid(field, "entry %d: %q is not a report id", i, id)
		}
		if s := u.String(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// CampaignQuery is one keyset page of campaigns, by name then id.
type CampaignQuery struct {
	AfterName, AfterID string
	Limit              int
}

// CampaignMember is a verified report of a campaign (for the records).
type CampaignMember struct {
	ThreatID string
	Ref      core.CampaignRef
}

// CampaignStore keeps campaigns.
type CampaignStore interface {
	// CreateCampaign stores a new campaign with its reports: each must be
	// verified (a NotFoundError naming the first that is not).
	CreateCampaign(ctx context.Context, c Campaign) error
	// UpdateCampaign applies a change and returns the campaign after it:
	// NotFound for an unknown campaign or an added report that is not
	// verified; adding a report already in it or removing one that is not
	// changes nothing; Invalid past MaxCampaignReports.
	UpdateCampaign(ctx context.Context, ch CampaignChange) (Campaign, error)
	// GetCampaign returns a campaign with its reports (verified ones only)
	// and its first and last seen.
	GetCampaign(ctx context.Context, id string) (Campaign, error)
	// ListCampaigns returns one page of campaigns by name (q.Limit
	// 1..MaxPage), each with its reports.
	ListCampaigns(ctx context.Context, q CampaignQuery) ([]Campaign, error)
	// CampaignMembers returns every verified report's campaigns (for the
	// records; the daemon reads them at start and after each change).
	CampaignMembers(ctx context.Context) ([]CampaignMember, error)
	// SharedIndicatorGroups returns the indicators (a key of
	// threat_indicators) that between q.MinSize and q.MaxSize verified
	// reports name, largest first, at most q.Limit (1..MaxPage), each with
	// its reports.
	SharedIndicatorGroups(ctx context.Context, q IndicatorGroupQuery) ([]IndicatorGroup, error)
	// EachVerifiedText calls fn with batches of every verified report's
	// texts (campaign suggestions read them once).
	EachVerifiedText(ctx context.Context, fn func([]ReportText) error) error
}

// IndicatorGroupQuery bounds the shared-indicator groups asked for.
type IndicatorGroupQuery struct {
	MinSize, MaxSize, Limit int
}

// IndicatorGroup is an indicator of compromise several verified reports
// name.
type IndicatorGroup struct {
	Key       string
	ThreatIDs []string
}

// ReportText is what campaign suggestions read of a verified report.
type ReportText struct {
	ID, ResourceIdentifier string
	Tags                   []string
	ThreatDescription      string
	PayloadDescription     string
}
