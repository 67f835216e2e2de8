package firewall

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

func TestQuarantineWindows(t *testing.T) {
	p, _ := NewPolicy(matcher{}, map[string][]string{"npm": {"@acme/*"}}, served)
	err := p.Configure(Settings{Quarantine: Quarantine{
		Default:    48 * time.Hour,
		Ecosystems: map[string]time.Duration{"pypi": 72 * time.Hour, "go": 0},
		Packages: []PackageWindow{
			{Ecosystem: "npm", Name: "react*", Duration: 24 * time.Hour},
			{Ecosystem: "npm", Name: "react-dom*", Duration: 12 * time.Hour},
			{Ecosystem: "npm", Name: "react-dom", Duration: time.Hour},
			{Ecosystem: "go", Name: "example.com/*", Duration: 5 * time.Hour},
		},
		Exclude: map[string][]string{"npm": {"lodash"}, "pypi": {"Our_Tools"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		eco, name string
		want      time.Duration
	}{
		{"npm", "left-pad", 48 * time.Hour},      // the default
		{"pypi", "requests", 72 * time.Hour},     // the ecosystem's
		{"go", "golang.org/x/mod", 0},            // the ecosystem's, off
		{"go", "example.com/lib", 5 * time.Hour}, // a package glob over the ecosystem
		{"npm", "react", 24 * time.Hour},         // a glob
		{"npm", "react-dom-x", 12 * time.Hour},   // the longer glob
		{"npm", "React-DOM", time.Hour},          // the exact name, folded
		{"npm", "lodash", 0},                     // excluded
		{"npm", "Lodash", 48 * time.Hour},        // another npm package: an exclusion lifts only its own name
		{"pypi", "our.tools", 0},                 // excluded, PEP 503
		{"npm", "@acme/internal", 0},             // private
		{"oci", "library/alpine", 0},             // never images
	} {
		if got := p.Window(c.eco, c.name); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.eco, c.name, got, c.want)
		}
	}
	for _, bad := range []Settings{
		{Actions: map[string]string{"typosquat": "block"}},
		{Actions: map[string]string{"malicious": "deny"}},
		{Quarantine: Quarantine{Ecosystems: map[string]time.Duration{"cpan": time.Hour}}},
		{Quarantine: Quarantine{MissingTime: "maybe"}},
		{Quarantine: Quarantine{Packages: []PackageWindow{{Ecosystem: "npm"}}}},
	} {
		if err := p.Configure(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	evil := report("t-evil", "1.0.1", false)
	p, _ := NewPolicy(matcher{"package:npm:evil": {evil}}, nil, served)
	if err := p.Configure(Settings{Quarantine: Quarantine{Default: 48 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := p.Lookup(ctx, "npm", "evil")
	if err != nil {
		t.Fatal(err)
	}
	old := Facts{Published: now.Add(-30 * 24 * time.Hour)}
	fresh := Facts{Published: now.Add(-3*time.Hour - 12*time.Minute)}

	if r := p.Decide(v, "1.0.0", old, now, nil); r.Action != "" || r.Recorded() {
		t.Fatalf("an old clean version: %+v", r)
	}
	r := p.Decide(v, "1.0.1", old, now, nil)
	if !r.Refused() || r.Rule != "malicious" || r.Blocked == nil || !strings.HasPrefix(r.Message, "Blocked by threatd: npm evil@1.0.1 is malicious") {
		t.Fatalf("malicious: %+v", r)
	}
	r = p.Decide(v, "1.0.2", fresh, now, nil)
	want := "Held by threatd: npm evil@1.0.2 was published 3h12m ago; quarantine is 2d, until 2026-11-27T08:48:00Z"
	if !r.Refused() || r.Rule != "quarantine" || r.Message != want || !r.Until.Equal(now.Add(48*time.Hour-3*time.Hour-12*time.Minute)) || r.Blocked != nil {
		t.Fatalf("held: %+v\nwant %s", r, want)
	}
	// A malicious version that is also new: malicious decides.
	if r := p.Decide(v, "1.0.1", fresh, now, nil); r.Rule != "malicious" || !r.Until.IsZero() {
		t.Fatalf("malicious and new: %+v", r)
	}
	// No publish time: held from when it was first seen, or allowed.
	if r := p.Decide(v, "1.0.3", Facts{FirstSeen: now.Add(-time.Hour)}, now, nil); !r.Refused() || !strings.Contains(r.Message, "has no publish time and was first seen 1h ago") {
		t.Fatalf("missing time: %+v", r)
	}
	// Install scripts warn by default, with the header text.
	r = p.Decide(v, "1.0.4", Facts{Published: old.Published, NewScripts: []string{"postinstall"}, Previous: "1.0.3"}, now, nil)
	if r.Action != "warn" || r.Refused() || len(r.Warnings) != 1 || r.Warnings[0] != "install_scripts: npm evil@1.0.4 adds install scripts (postinstall) that 1.0.3 did not have" {
		t.Fatalf("install scripts: %+v", r)
	}

	// Waivers lift one rule of one version, until they end.
	w, err := NewWaiver(WaiverRequest{Ecosystem: "npm", Name: "evil", Version: "1.0.1", Rule: "malicious", Reason: "ours", For: "1h"}, "rita", now)
	if err != nil {
		t.Fatal(err)
	}
	// npm's legacy mixed-case names are other packages: a waiver of EVIL
	// lifts nothing of evil.
	upper := w
	upper.Name = "EVIL"
	if r := p.Decide(v, "1.0.1", old, now.Add(30*time.Minute), NewWaivers([]Waiver{upper})); !r.Refused() {
		t.Fatalf("a waiver of EVIL lifted evil: %+v", r)
	}
	ws := NewWaivers([]Waiver{w})
	if r := p.Decide(v, "1.0.1", old, now.Add(30*time.Minute), ws); r.Action != "waived" || r.Rule != "malicious" || r.Refused() {
		t.Fatalf("waived: %+v", r)
	}
	if r := p.Decide(v, "1.0.1", fresh, now.Add(30*time.Minute), ws); r.Rule != "quarantine" || !r.Refused() {
		t.Fatalf("a waiver of malicious does not lift the quarantine: %+v", r)
	}
	if r := p.Decide(v, "1.0.1", old, now.Add(time.Hour), ws); !r.Refused() {
		t.Fatalf("an ended waiver: %+v", r)
	}

	// Actions: warn and monitor serve; off ignores.
	for action, want := range map[string]string{"warn": "warn", "monitor": "monitor", "off": ""} {
		if err := p.Configure(Settings{Actions: map[string]string{"quarantine": action}, Quarantine: Quarantine{Default: 48 * time.Hour}}); err != nil {
			t.Fatal(err)
		}
		r := p.Decide(v, "1.0.2", fresh, now, nil)
		if r.Action != want || r.Refused() || (action == "warn") != (len(r.Warnings) == 1) {
			t.Fatalf("quarantine: %s: %+v", action, r)
		}
	}
}

func TestNewWaiver(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		r     WaiverRequest
		field string
	}{
		{WaiverRequest{Ecosystem: "npm", Name: "x", Rule: "malicious", For: "1h"}, "reason"},
		{WaiverRequest{Ecosystem: "npm", Name: "x", Rule: "malicious", Reason: "r"}, "for"},
		{WaiverRequest{Ecosystem: "cpan", Name: "x", Rule: "malicious", Reason: "r", For: "1h"}, "ecosystem"},
		{WaiverRequest{Ecosystem: "npm", Name: "x", Rule: "typosquat", Reason: "r", For: "1h"}, "rule"},
		{WaiverRequest{Ecosystem: "npm", Name: "x", Rule: "malicious", Reason: "r", For: "soon"}, "for"},
		{WaiverRequest{Ecosystem: "npm", Name: "x", Rule: "malicious", Reason: "r", Until: now.Add(-time.Hour)}, "until"},
		{WaiverRequest{Ecosystem: "npm", Name: "", Rule: "malicious", Reason: "r", For: "1h"}, "name"},
		{WaiverRequest{Ecosystem: "npm", Name: "x", Rule: "malicious", Reason: "r", For: "400d"}, "for"},
	} {
		_, err := NewWaiver(c.r, "rita", now)
		fe, ok := err.(*core.FieldError)
		if !ok || fe.Field != c.field {
			t.Errorf("%+v: %v, want an error naming %s", c.r, err, c.field)
		}
	}
	w, err := NewWaiver(WaiverRequest{Ecosystem: "NPM", Name: "x", Rule: "quarantine", Reason: "r", For: "7d"}, "rita", now)
	if err != nil || w.Ecosystem != "npm" || w.Until.Sub(w.CreatedAt) != 7*24*time.Hour {
		t.Fatalf("%+v %v", w, err)
	}
}

func TestEvictHalf(t *testing.T) {
	m := map[string]int{}
	for i := range 1000 {
		m[strings.Repeat("k", i%7)+string(rune('a'+i%26))+time.Duration(i).String()] = i
	}
	n := len(m)
	evictHalf(m)
	if len(m) != n-n/2 {
		t.Fatalf("%d left of %d, want %d", len(m), n, n-n/2)
	}
}
