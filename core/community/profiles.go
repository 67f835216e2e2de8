package community

import (
	"context"
	"slices"
	"time"

	"github.com/threatd/threatd/core"
)

// Profile is one user's public profile: who, since when, the points and
// counts, and the latest contributions (docs/community.md, "Profiles").
type Profile struct {
	Name string
	// Source: the user a source's imports are attributed to (public
	// names are not unique: a person may take a source's name, and the
	// page tells them apart).
	Source      bool
	Since       time.Time
	Rep         Reputation
	Recent      []Contribution
	MoreHistory bool
}

// Contribution is a reputation event, with its report when published.
type Contribution struct {
	ReputationEvent
	Threat *core.Threat
}

// ProfileStore is what profiles are read from.
type ProfileStore interface {
	UsersByName(ctx context.Context, name string) ([]core.User, error)
	Reputations(ctx context.Context, userIDs []string) ([]Reputation, error)
	ReputationHistory(ctx context.Context, q HistoryQuery) ([]ReputationEvent, error)
	GetThreats(ctx context.Context, ids []string) ([]core.Threat, error)
}

// Profiles is the read model of a public profile: the users named name
// (public names are not unique; a source's user first), each with at most
// most of their latest contributions (none: no such user).
func Profiles(ctx context.Context, st ProfileStore, name string, most int) ([]Profile, error) {
	users, err := st.UsersByName(ctx, name)
	if err != nil || len(users) == 0 {
		return nil, err
	}
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = u.ID
	}
	reps, err := st.Reputations(ctx, ids)
	if err != nil {
		return nil, err
	}
	var views []Profile
	for _, u := range users {
		v := Profile{Name: u.Name, Since: u.CreatedAt, Source: core.IsSourceUserEmail(u.Email)}
		if i := slices.IndexFunc(reps, func(r Reputation) bool { return r.UserID == u.ID }); i >= 0 {
			v.Rep = reps[i]
		}
		events, err := st.ReputationHistory(ctx, HistoryQuery{UserID: u.ID, Limit: most + 1})
		if err != nil {
			return nil, err
		}
		if len(events) > most {
			events, v.MoreHistory = events[:most], true
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
			ts, err := st.GetThreats(ctx, tids)
			if err != nil {
				return nil, err
			}
			for _, t := range ts {
				if t.Status == core.StatusVerified {
					published[t.ID] = t
				}
			}
		}
		for _, e := range events {
			ct := Contribution{ReputationEvent: e}
			if t, ok := published[e.ThreatID]; ok && e.Kind != ReputationDuplicate {
				ct.Threat = &t
			}
			v.Recent = append(v.Recent, ct)
		}
		views = append(views, v)
	}
	// A source first: the account people come to its name for.
	slices.SortStableFunc(views, func(a, b Profile) int {
		switch {
		case a.Source == b.Source:
			return 0
		case a.Source:
			return -1
		}
		return 1
	})
	return views, nil
}

// ReputationOf is one user's points and counts (zero for a user who has
// none yet, or no user: "").
func ReputationOf(ctx context.Context, st ProfileStore, userID string) (Reputation, error) {
	if userID == "" {
		return Reputation{}, nil
	}
	reps, err := st.Reputations(ctx, []string{userID})
	if err != nil || len(reps) != 1 {
		return Reputation{}, err
	}
	return reps[0], nil
}
