package core

import "testing"

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
