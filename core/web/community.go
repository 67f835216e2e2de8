package web

import (
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// leaderboardTTL is how long a rendered leaderboard's rows are reused: the
// page is public and cheap to ask for, the sum behind it is not.
const leaderboardTTL = 30 * time.Second

// leaderboards caches each period's rows.
type leaderboards struct {
	mu   sync.Mutex
	rows map[string]leaderboardRows
}

type leaderboardRows struct {
	at      time.Time
	entries []core.LeaderboardEntry
}

// leaderboard is /leaderboard?period=30d|365d|all: the users with the most
// points earned in the period (points come from review decisions only, so
// sightings, one's own included, never move it).
func (s *Site) leaderboard(c *echo.Context) error {
	period := c.QueryParam("period")
	if period == "" {
		period = core.Period30d
	}
	since, err := core.PeriodStart(period, time.Now())
	if err != nil {
		return s.errorPage(c, http.StatusBadRequest, "period: must be 30d, 365d or all.")
	}
	s.boards.mu.Lock()
	cached, ok := s.boards.rows[period]
	s.boards.mu.Unlock()
	if !ok || time.Since(cached.at) > leaderboardTTL {
		entries, err := s.store.Leaderboard(c.Request().Context(), core.LeaderboardQuery{Since: since, Limit: core.MaxLeaderboard})
		if err != nil {
			return err
		}
		cached = leaderboardRows{at: time.Now(), entries: entries}
		s.boards.mu.Lock()
		if s.boards.rows == nil {
			s.boards.rows = map[string]leaderboardRows{}
		}
		s.boards.rows[period] = cached
		s.boards.mu.Unlock()
	}
	return s.render(c, http.StatusOK, "leaderboard", map[string]any{"Title": "Leaderboard", "Entries": cached.entries, "Period": period,
		"Periods": []string{core.Period30d, core.Period365d, core.PeriodAll}})
}

// profileEvents bounds the history a profile shows.
const profileEvents = 50

// profile is /users/<public name>: each active user of that name (names
// are not unique) with their points, counts and latest contributions;
// never an e-mail address.
func (s *Site) profile(c *echo.Context) error {
	ctx := c.Request().Context()
	users, err := s.store.UsersByName(ctx, c.Param("name"))
	if err != nil {
		return err
	}
	if len(users) == 0 {
		return s.errorPage(c, http.StatusNotFound, "No contributor has this name.")
	}
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = u.ID
	}
	reps, err := s.store.Reputations(ctx, ids)
	if err != nil {
		return err
	}
	type contribution struct {
		core.ReputationEvent
		Threat *core.Threat
	}
	type profileView struct {
		Name        string
		Since       time.Time
		Rep         core.Reputation
		Recent      []contribution
		MoreHistory bool
	}
	var views []profileView
	for _, u := range users {
		v := profileView{Name: u.Name, Since: u.CreatedAt}
		if i := slices.IndexFunc(reps, func(r core.Reputation) bool { return r.UserID == u.ID }); i >= 0 {
			v.Rep = reps[i]
		}
		events, err := s.store.ReputationHistory(ctx, core.HistoryQuery{UserID: u.ID, Limit: profileEvents + 1})
		if err != nil {
			return err
		}
		if len(events) > profileEvents {
			events, v.MoreHistory = events[:profileEvents], true
		}
		// The reports of the history, to link the published ones.
		var tids []string
		for _, e := range events {
			if e.ThreatID != "" && !slices.Contains(tids, e.ThreatID) {
				tids = append(tids, e.ThreatID)
			}
		}
		published := map[string]core.Threat{}
		if len(tids) > 0 {
			ts, err := s.store.GetThreats(ctx, tids)
			if err != nil {
				return err
			}
			for _, t := range ts {
				if t.Status == core.StatusVerified {
					published[t.ID] = t
				}
			}
		}
		for _, e := range events {
			ct := contribution{ReputationEvent: e}
			if t, ok := published[e.ThreatID]; ok && e.Kind != core.ReputationDuplicate {
				ct.Threat = &t
			}
			v.Recent = append(v.Recent, ct)
		}
		views = append(views, v)
	}
	return s.render(c, http.StatusOK, "profile", map[string]any{"Title": users[0].Name, "Profiles": views})
}

// campaignPageReports bounds the reports a campaign page lists.
const campaignPageReports = 500

// campaignPage is /campaigns/<id>: a campaign and its reports, for anyone.
func (s *Site) campaignPage(c *echo.Context) error {
	ctx := c.Request().Context()
	camp, err := s.store.GetCampaign(ctx, c.Param("id"))
	if errors.Is(err, core.ErrNotFound) {
		return s.errorPage(c, http.StatusNotFound, "No campaign has this id.")
	}
	if err != nil {
		return err
	}
	ids := camp.ThreatIDs[:min(len(camp.ThreatIDs), campaignPageReports)]
	var reports []core.Threat
	for chunk := range slices.Chunk(ids, core.MaxGetThreats) {
		ts, err := s.store.GetThreats(ctx, chunk)
		if err != nil {
			return err
		}
		reports = append(reports, ts...)
	}
	// Newest verification first.
	slices.SortFunc(reports, func(a, b core.Threat) int {
		if a.VerifiedAt == nil || b.VerifiedAt == nil {
			return 0
		}
		return b.VerifiedAt.Compare(*a.VerifiedAt)
	})
	return s.render(c, http.StatusOK, "campaign", map[string]any{"Title": camp.Name, "C": camp, "Description": s.markdown(camp.Description),
		"Reports": reports, "Total": int64(len(camp.ThreatIDs)), "Cut": len(camp.ThreatIDs) > len(ids)})
}
