package core

import (
	"testing"
	"time"
)

// One whole-number rule for every query parameter that takes one.
func TestParseWhole(t *testing.T) {
	for s, ok := range map[string]bool{"1": true, "24": true, "7": true, "0": false, "25": false, "07": false, "+7": false,
		"7.0": false, " 7": false, "-1": false, "": false, "1e1": false, "99999999999999999999": false} {
		n, err := ParseWhole("hours", s, 1, 24)
		if (err == nil) != ok {
			t.Errorf("%q: %d %v", s, n, err)
		}
		if err != nil && err.Error() != "hours: must be a whole number from 1 to 24" {
			t.Errorf("%q: message %q", s, err)
		}
	}
}

// One rule for who sees a report's contact e-mail: its submitter and
// reviewers.
func TestContactVisibleTo(t *testing.T) {
	th := Threat{SubmitterID: "u1", Details: Details{ContactEmail: "a@example.com"}}
	for _, c := range []struct {
		who  Principal
		sees bool
	}{
		{Principal{User: User{ID: "u1", Role: RoleSubmitter}}, true},
		{Principal{User: User{ID: "u2", Role: RoleSubmitter}}, false},
		{Principal{User: User{ID: "u3", Role: RoleReviewer}}, true},
		{Principal{User: User{ID: "u4", Role: RoleAdmin}}, true},
		{Principal{}, false},
	} {
		if got := th.VisibleTo(c.who).Details.ContactEmail != ""; got != c.sees || th.ShowsContactTo(c.who) != c.sees {
			t.Errorf("%+v sees the contact: %v, want %v", c.who.User, got, c.sees)
		}
	}
}

// TestWindowRules: the feed's and the exports' windows are one parser with
// their own bounds; each refusal names the parameter at fault.
func TestWindowRules(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	feed := Window{Default: time.Hour, Max: 7 * 24 * time.Hour, Until: true}
	for _, c := range []struct {
		w                   Window
		since, until, hours string
		from, to            time.Time
		err                 string
	}{
		{w: feed, from: now.Add(-time.Hour), to: now},
		{w: exportWindow, from: now.Add(-24 * time.Hour), to: now},
		{w: feed, hours: "3", from: now.Add(-3 * time.Hour), to: now},
		{w: feed, since: "2026-11-20T00:00:00Z", until: "2026-11-21T00:00:00Z", from: now.Add(-36 * time.Hour), to: now.Add(-12 * time.Hour)},
		{w: exportWindow, since: "2026-11-21T00:00:00+01:00", from: now.Add(-13 * time.Hour), to: now},
		{w: feed, hours: "2", since: "2026-11-20T00:00:00Z", err: "hours: give either hours or since/until, not both"},
		{w: exportWindow, hours: "2", since: "2026-11-20T00:00:00Z", err: "hours: give either hours or since, not both"},
		{w: feed, until: "2026-11-20T00:00:00Z", err: "since: is required with until"},
		{w: feed, hours: "25", err: "hours: must be a whole number from 1 to 24"},
		{w: feed, since: "yesterday", err: "since: must be an RFC 3339 timestamp, e.g. 2026-11-20T00:00:00Z"},
		{w: feed, since: "2026-11-20T00:00:00Z", until: "x", err: "until: must be an RFC 3339 timestamp, e.g. 2026-11-21T00:00:00Z"},
		{w: feed, since: "2026-11-20T00:00:00Z", until: "2026-11-20T00:00:00Z", err: "until: must be after since"},
		{w: exportWindow, since: "2026-11-22T00:00:00Z", err: "since: must be in the past"},
		{w: exportWindow, since: "2026-11-20T11:59:59Z", err: "since: the window is longer than the maximum of 24h0m0s"},
		{w: feed, since: "2026-11-01T00:00:00Z", err: "since: the window is longer than the maximum of 168h0m0s"},
	} {
		from, to, err := c.w.Parse(now, c.since, c.until, c.hours)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%+v: got %v, want %q", c, err, c.err)
			}
			continue
		}
		if err != nil || !from.Equal(c.from) || !to.Equal(c.to) {
			t.Errorf("%+v: got %s–%s, %v", c, from, to, err)
		}
	}
}
