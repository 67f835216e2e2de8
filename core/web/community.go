package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// leaderboardTTL is how long a rendered leaderboard's rows are reused: the
// page is public and cheap to ask for, the sum behind it is not.
const leaderboardTTL = 30 * time.Second

// pageCache keeps what public pages read (a leaderboard's rows, a
// profile, a campaign) for a while: at most 1,000 keys, the least
// recently used dropped first, each for the cache's time to live.
type pageCache[V any] = expirable.LRU[string, V]

func newPageCache[V any](ttl time.Duration) *pageCache[V] {
	return expirable.NewLRU[string, V](1000, nil, ttl)
}

// leaderboard is /leaderboard?period=30d|365d|all: the users with the most
// points earned in the period (points come from review decisions only, so
// sightings, one's own included, never move it).
func (s *Site) leaderboard(c *echo.Context) error {
	period := c.QueryParam("period")
	if period == "" {
		period = community.Period30d
	}
	since, err := community.PeriodStart(period, time.Now())
	if err != nil {
		return s.errorPage(c, http.StatusBadRequest, "period: must be 30d, 365d or all.")
	}
	entries, ok := s.boards.Get(period)
	if !ok {
		if entries, err = s.store.Leaderboard(c.Request().Context(), community.LeaderboardQuery{Since: since, Limit: community.MaxLeaderboard}); err != nil {
			return err
		}
		s.boards.Add(period, entries)
	}
	return s.render(c, http.StatusOK, "leaderboard", map[string]any{"Title": "Leaderboard", "Entries": entries, "Period": period,
		"Periods": []string{community.Period30d, community.Period365d, community.PeriodAll}})
}

// profileEvents bounds the history a profile shows.
const profileEvents = 50

// profile is /users/<public name>: each active user of that name (names
// are not unique) with their points, counts and latest contributions;
// never an e-mail address. Read again after leaderboardTTL.
func (s *Site) profile(c *echo.Context) error {
	name := c.Param("name")
	views, ok := s.profiles.Get(name)
	if !ok {
		var err error
		if views, err = community.Profiles(c.Request().Context(), s.store, name, profileEvents); err != nil {
			return err
		}
		if len(views) == 0 {
			// Not kept: names nobody has would only push out the others.
			return s.errorPage(c, http.StatusNotFound, "No contributor has this name.")
		}
		s.profiles.Add(name, views)
	}
	return s.render(c, http.StatusOK, "profile", map[string]any{"Title": views[0].Name, "Profiles": views})
}

// campaignTTL is how long a campaign read for its page is used again: the
// page is public, and reading a campaign works out its first and last
// seen from every report of it. A change made on this site is shown at
// once; one made elsewhere within campaignTTL.
const campaignTTL = 10 * time.Second

// campaign reads campaign id, through the cache.
func (s *Site) campaign(ctx context.Context, id string) (community.Campaign, error) {
	if c, ok := s.camps.Get(id); ok {
		return c, nil
	}
	c, err := s.store.GetCampaign(ctx, id)
	if err != nil {
		return c, err
	}
	s.camps.Add(id, c)
	return c, nil
}

// forgetCampaign drops a changed campaign from the cache.
func (s *Site) forgetCampaign(id string) {
	s.camps.Remove(id)
}

// campaignPageReports is the reports a campaign page lists at once.
const campaignPageReports = 50

// campaignPage is /campaigns/<id>?page=N: a campaign and a page of its
// reports, the most recently verified first, for anyone.
func (s *Site) campaignPage(c *echo.Context) error {
	ctx := c.Request().Context()
	camp, err := s.campaign(ctx, c.Param("id"))
	if errors.Is(err, core.ErrNotFound) {
		return s.errorPage(c, http.StatusNotFound, "No campaign has this id.")
	}
	if err != nil {
		return err
	}
	total := len(camp.ThreatIDs)
	pages := max(1, (total+campaignPageReports-1)/campaignPageReports)
	page := 1
	if p := c.QueryParam("page"); p != "" {
		if page, err = strconv.Atoi(p); err != nil || page < 1 || page > pages {
			return s.errorPage(c, http.StatusNotFound, fmt.Sprintf("This campaign's reports fill %s.", core.Count(pages, "page", "pages")))
		}
	}
	// ThreatIDs come oldest verification first: the page counts from the end.
	end := total - (page-1)*campaignPageReports
	ids := slices.Clone(camp.ThreatIDs[max(0, end-campaignPageReports):end])
	slices.Reverse(ids)
	reports, err := s.store.GetThreats(ctx, ids)
	if err != nil {
		return err
	}
	at := map[string]int{}
	for i, id := range ids {
		at[id] = i
	}
	slices.SortFunc(reports, func(a, b core.Threat) int { return at[a.ID] - at[b.ID] })
	data := map[string]any{"Title": camp.Name, "C": camp, "Description": s.markdown(camp.Description),
		"Reports": reports, "Total": int64(total), "Page": page, "Pages": pages, "First": (page-1)*campaignPageReports + 1,
		"Last": (page-1)*campaignPageReports + len(ids)}
	if page > 1 {
		data["Prev"] = page - 1
	}
	if page < pages {
		data["Next"] = page + 1
	}
	return s.render(c, http.StatusOK, "campaign", data)
}
