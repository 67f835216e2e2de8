package storagetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/webhooks"
)

// testFirewall: waivers are stored, listed while in force and removed;
// decisions are stored, paged in order and their events queued for the
// subscriptions that name them; held versions keep their first sighting.
func testFirewall(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	at := now()

	w1, err := firewall.NewWaiver(firewall.WaiverRequest{Ecosystem: "npm", Name: "left-pad", Version: "1.0.1", Rule: "malicious", Reason: "false positive", For: "1h"}, "rita@example.com", at)
	if err != nil {
		t.Fatal(err)
	}
	w2, _ := firewall.NewWaiver(firewall.WaiverRequest{Ecosystem: "pypi", Name: "acme-*", Rule: "quarantine", Reason: "our own", For: "2h"}, "rita@example.com", at.Add(time.Second))
	for _, w := range []firewall.Waiver{w1, w2} {
		if err := s.CreateWaiver(c, w); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ListWaivers(c, at.Add(90*time.Minute))
	if err != nil || len(got) != 1 || got[0] != w2 {
		t.Fatalf("waivers in force after 90 min: %+v %v (want %+v)", got, err, w2)
	}
	if got, _ := s.ListWaivers(c, at.Add(-time.Hour)); len(got) != 2 || got[0].ID != w2.ID || got[1] != w1 {
		t.Fatalf("every waiver, newest first: %+v", got)
	}
	if err := s.DeleteWaiver(c, w1.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteWaiver(c, w1.ID); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}

	// Decisions: one subscription names firewall.blocked for npm, one
	// names the report events only.
	blocked := webhook(t, s, []string{firewall.EventFirewallBlocked}, "npm")
	reports := webhook(t, s, nil, "")
	var ds []firewall.FirewallDecision
	for i := range 1203 {
		d := firewall.FirewallDecision{Time: at.Add(time.Duration(i%7) * time.Millisecond), Ecosystem: "npm", Name: "evil", Version: fmt.Sprintf("1.0.%d", i),
			Purl: fmt.Sprintf("pkg:npm/evil@1.0.%d", i), Rule: firewall.RuleMalicious, Action: firewall.ActionBlock, ThreatIDs: []string{"t1", "t2"},
			User: "dev@example.com", ClientIP: "127.0.0.1"}
		if i%2 == 0 {
			d.Event, d.EventType = []byte(fmt.Sprintf(`{"type":"firewall.blocked","n":%d}`, i)), firewall.EventFirewallBlocked
		}
		if i == 1 {
			d.Rule, d.Action, d.Until, d.ThreatIDs = firewall.RuleQuarantine, firewall.ActionWarn, at.Add(time.Hour), nil
			d.Event, d.EventType = []byte(`{"type":"firewall.warned"}`), firewall.EventFirewallWarned
		}
		ds = append(ds, d)
	}
	if err := s.RecordDecisions(c, ds); err != nil {
		t.Fatal(err)
	}
	var listed []firewall.FirewallDecision
	q := firewall.FirewallDecisionQuery{Since: at, Limit: 500}
	for {
		page, err := s.ListDecisions(c, q)
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, page.Decisions...)
		if !page.More {
			break
		}
		q.After = page.Decisions[len(page.Decisions)-1].Seq
	}
	if len(listed) != len(ds) {
		t.Fatalf("listed %d decisions of %d", len(listed), len(ds))
	}
	seen := map[string]bool{}
	for i, d := range listed {
		if seen[d.Version] {
			t.Fatalf("%s listed twice", d.Version)
		}
		seen[d.Version] = true
		if i > 0 && (d.Time.Before(listed[i-1].Time) || d.Time.Equal(listed[i-1].Time) && d.Seq <= listed[i-1].Seq) {
			t.Fatalf("out of order at %d", i)
		}
		if d.Version == "1.0.1" && (d.Action != firewall.ActionWarn || !d.Until.Equal(at.Add(time.Hour)) || d.ThreatIDs != nil) {
			t.Fatalf("warned decision: %+v", d)
		}
		if d.Version == "1.0.2" && (d.User != "dev@example.com" || d.ClientIP != "127.0.0.1" || len(d.ThreatIDs) != 2 || d.Purl != "pkg:npm/evil@1.0.2") {
			t.Fatalf("blocked decision: %+v", d)
		}
	}
	if page, err := s.ListDecisions(c, firewall.FirewallDecisionQuery{Since: at.Add(6 * time.Millisecond), Limit: 10000}); err != nil || len(page.Decisions) != 1203/7 || page.More {
		t.Fatalf("since: %d %v", len(page.Decisions), err)
	}
	if _, err := s.ListDecisions(c, firewall.FirewallDecisionQuery{Limit: 0}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("limit 0: %v", err)
	}
	due, err := s.DueDeliveries(c, webhooks.DueQuery{Now: time.Now().Add(time.Hour), Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, d := range due {
		if d.WebhookID == reports.ID {
			t.Fatalf("a subscription without firewall events got %+v", d)
		}
		if d.WebhookID == blocked.ID {
			events++
			if d.Seq >= 0 || d.Kind != firewall.EventFirewallBlocked || d.Payload == nil {
				t.Fatalf("firewall delivery: %+v", d)
			}
		}
	}
	if events != 602 {
		t.Fatalf("%d firewall.blocked deliveries, want 602", events)
	}
	// A subscription names registries as reports do: crates.io receives
	// the firewall's cargo decisions, npm's does not.
	crates := webhook(t, s, []string{firewall.EventFirewallBlocked}, "crates.io")
	if err := s.RecordDecisions(c, []firewall.FirewallDecision{{Time: at, Ecosystem: firewall.FirewallCargo, Name: "evil", Version: "1.0.0", Purl: "pkg:cargo/evil@1.0.0",
		Rule: firewall.RuleMalicious, Action: firewall.ActionBlock, Event: []byte(`{"type":"firewall.blocked"}`), EventType: firewall.EventFirewallBlocked}}); err != nil {
		t.Fatal(err)
	}
	if due, err = s.DueDeliveries(c, webhooks.DueQuery{Now: time.Now().Add(time.Hour), Limit: 10000}); err != nil {
		t.Fatal(err)
	}
	perHook := map[string]int{}
	for _, d := range due {
		perHook[d.WebhookID]++
	}
	if perHook[crates.ID] != 1 || perHook[blocked.ID] != 602 {
		t.Fatalf("after a cargo decision: %d deliveries to the crates.io subscription (want 1), %d to npm's (want 602)", perHook[crates.ID], perHook[blocked.ID])
	}

	// Held versions keep their first sighting.
	first := at.Add(-time.Hour)
	if err := s.RecordHeld(c, []firewall.HeldVersion{
		{Ecosystem: "pypi", Name: "fresh", Version: "2.0", FirstSeen: first, Until: at.Add(47 * time.Hour)},
		{Ecosystem: "npm", Name: "new", Version: "1.0.0", Published: at, FirstSeen: at, Until: at.Add(48 * time.Hour)},
		{Ecosystem: "go", Name: "example.com/old", Version: "v1.0.0", Published: at.Add(-50 * time.Hour), FirstSeen: at, Until: at.Add(-2 * time.Hour)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordHeld(c, []firewall.HeldVersion{{Ecosystem: "pypi", Name: "fresh", Version: "2.0", FirstSeen: at, Until: at.Add(46 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	held, err := s.ListHeld(c, firewall.HeldQuery{Now: at, Limit: 1})
	if err != nil || len(held) != 1 || held[0].Name != "fresh" || !held[0].FirstSeen.Equal(first) || !held[0].Until.Equal(at.Add(46*time.Hour)) {
		t.Fatalf("first held: %+v %v", held, err)
	}
	after := held[0].Cursor()
	if held, err = s.ListHeld(c, firewall.HeldQuery{Now: at, After: after, Limit: 10}); err != nil || len(held) != 1 || held[0].Name != "new" || !held[0].Published.Equal(at) {
		t.Fatalf("next held: %+v %v", held, err)
	}
	if n, err := s.TrimDecisions(c, at.Add(3*time.Millisecond)); err != nil || n != int64(1203/7*3+min(1203%7, 3))+1 { // and the cargo decision
		t.Fatalf("trimmed %d: %v", n, err)
	}
}

// Digests pinned under image reports: read back per report, a pin made
// twice kept as first made, the bound per report and per call held, bad
// pins refused.
func testImagePins(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	at := now().Truncate(time.Second)
	pin := func(id, d string, when time.Time) firewall.DigestPin {
		return firewall.DigestPin{ThreatID: id, Digest: d, PinnedAt: when}
	}
	d1, d2 := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	if err := s.PinDigests(c, []firewall.DigestPin{pin("t1", d1, at), pin("t1", d2, at.Add(time.Second)), pin("t2", d1, at)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PinDigests(c, []firewall.DigestPin{pin("t1", d1, at.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	got, err := s.PinnedDigests(c, []string{"t1", "t3"})
	if err != nil || len(got) != 2 || got[0].Digest != d1 || got[1].Digest != d2 || !got[0].PinnedAt.Equal(at) || got[0].ThreatID != "t1" {
		t.Fatalf("pins of t1: %+v %v", got, err)
	}
	if none, err := s.PinnedDigests(c, nil); err != nil || len(none) != 0 {
		t.Fatalf("no ids: %+v %v", none, err)
	}
	var many []firewall.DigestPin
	for i := range firewall.MaxDigestPins + 5 {
		many = append(many, pin("t4", fmt.Sprintf("sha256:%064x", i), at))
		if len(many) == core.MaxGetThreats {
			if err := s.PinDigests(c, many); err != nil {
				t.Fatal(err)
			}
			many = many[:0]
		}
	}
	if err := s.PinDigests(c, many); err != nil {
		t.Fatal(err)
	}
	if got, err := s.PinnedDigests(c, []string{"t4"}); err != nil || len(got) != firewall.MaxDigestPins {
		t.Fatalf("a report's pins past the bound: %d %v", len(got), err)
	}
	for _, bad := range [][]firewall.DigestPin{{pin("", d1, at)}, {pin("t1", "", at)}, {pin("t1", strings.Repeat("x", 300), at)}, make([]firewall.DigestPin, core.MaxGetThreats+1)} {
		if err := s.PinDigests(c, bad); !errors.Is(err, core.ErrInvalid) {
			t.Fatalf("bad pins: %v", err)
		}
	}
}
