package core

import (
	"errors"
	"testing"
)

func TestNewUserNormalise(t *testing.T) {
	n, err := NewUser{Email: "  Alice@Example.COM "}.Normalise()
	if err != nil {
		t.Fatal(err)
	}
	if n.Email != "alice@example.com" || n.Name != "" || n.Tier != TierFree || n.Role != RoleSubmitter {
		t.Fatalf("defaults wrong: %+v", n)
	}
	n, err = NewUser{Email: "r@x.org", Name: "Rita R.", Tier: "paid", Role: "reviewer"}.Normalise()
	if err != nil || n.Name != "Rita R." || n.Tier != TierPaid || n.Role != RoleReviewer {
		t.Fatalf("got %+v, %v", n, err)
	}
}

func TestNewUserInvalid(t *testing.T) {
	cases := []struct {
		in    NewUser
		field string
	}{
		{NewUser{Email: ""}, "email"},
		{NewUser{Email: "not-an-address"}, "email"},
		{NewUser{Email: "Bob <bob@x.org>"}, "email"},
		{NewUser{Email: "a@x.org", Tier: "gold"}, "tier"},
		{NewUser{Email: "a@x.org", Role: "root"}, "role"},
		{NewUser{Email: "a@x.org", Name: "bad\x00name"}, "name"},
	}
	for _, c := range cases {
		_, err := c.in.Normalise()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: got %v, want a field error on %s", c.in, err, c.field)
		}
	}
}

func TestTransition(t *testing.T) {
	ok := []struct {
		from Status
		d    Decision
		note string
		to   Status
	}{
		{StatusPending, DecisionVerify, "", StatusVerified},
		{StatusPending, DecisionReject, "spam", StatusRejected},
		{StatusVerified, DecisionReject, "false positive", StatusRejected},
	}
	for _, c := range ok {
		got, err := Transition(c.from, c.d, c.note)
		if err != nil || got != c.to {
			t.Errorf("%s --%s--> got %s, %v; want %s", c.from, c.d, got, err, c.to)
		}
	}
	if _, err := Transition(StatusPending, DecisionReject, "  "); !errors.Is(err, ErrInvalid) {
		t.Errorf("reject without note: got %v, want invalid", err)
	}
	for _, c := range []struct {
		from Status
		d    Decision
	}{{StatusVerified, DecisionVerify}, {StatusRejected, DecisionVerify}, {StatusRejected, DecisionReject}} {
		if _, err := Transition(c.from, c.d, "n"); !errors.Is(err, ErrConflict) {
			t.Errorf("%s --%s-->: got %v, want conflict", c.from, c.d, err)
		}
	}
}
