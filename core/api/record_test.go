package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/record"
)

// TestRecordShape: a record has every field of core.Details under its JSON
// name, absent ones null and lists [], besides its own; contact_email only
// for those who may see it; a changes-mode record adds "change".
func TestRecordShape(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	th := core.Threat{ID: "id1", Status: core.StatusVerified, ReportType: core.TypeIP, ResourceIdentifier: "192.0.2.1", SubmitterID: "u1",
		CreatedAt: at, Details: core.Details{ThreatDescription: "C2", Publisher: "x", ContactEmail: "r@example.org"}}
	decode := func(v any) map[string]any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return m
	}
	srv := &Server{}
	m := decode(srv.toRecord(th, core.Principal{}))
	for _, f := range core.DetailFields {
		if _, ok := m[f.Name]; !ok && f.Name != "contact_email" {
			t.Errorf("record lacks %s: %v", f.Name, m)
		}
	}
	want := map[string]any{"id": "id1", "status": "verified", "report_type": "ip", "resource_identifier": "192.0.2.1", "registry": nil,
		"description": "C2", "threat_description": "C2", "publisher": "x", "payload_description": nil, "severity_level": nil,
		"tags": []any{}, "contributors": []any{}, "download_count": nil, "first_seen": nil, "created_at": "2026-11-01T00:00:00Z",
		"verified_at": nil, "verified_by": nil, "revision": float64(0),
		"sightings":  map[string]any{"seen": float64(0), "false_positive": float64(0), "expired": float64(0), "last_seen": nil},
		"confidence": float64(50), "disputed": false, "campaigns": []any{}}
	for k, v := range want {
		if !reflect.DeepEqual(m[k], v) {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	if _, ok := m["contact_email"]; ok {
		t.Errorf("contact_email shown to an anonymous reader")
	}
	if got := decode(srv.toRecord(th, core.Principal{User: core.User{ID: "u1"}}))["contact_email"]; got != "r@example.org" {
		t.Errorf("contact_email for its submitter = %v", got)
	}
	c := decode(srv.toChangedRecord(th, core.Principal{}, feedChange{Type: "verified", At: "t", Version: 2}))
	if c["id"] != "id1" || !reflect.DeepEqual(c["change"], map[string]any{"type": "verified", "at": "t", "version": float64(2)}) {
		t.Errorf("changes-mode record: %v", c)
	}
}

// TestCheckAnswerIsEncodingJSON: a check answer written by hand is what
// echo's JSON encoder (encoding/json, HTML escaping on) writes for the same
// result, with details as a record, as JSON read from the spill (alone or
// with the community's signals spliced in), or absent.
func TestCheckAnswerIsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	th := core.Threat{ID: "id1", Status: core.StatusVerified, ReportType: core.TypePackage, ResourceIdentifier: "<evil>&\"pkg\"", Registry: "npm",
		CreatedAt: at, Details: core.Details{ThreatDescription: "steals\ntokens \u2028 é", Tags: []string{"a&b"}}}
	rendered, err := record.PublicJSON(th)
	if err != nil {
		t.Fatal(err)
	}
	eco := "npm"
	for _, r := range []checkResult{
		{ReportType: "package", ResourceIdentifier: `clean "x" <y> \z`, Ecosystem: &eco, Message: `package "clean" is not in the threat database`},
		{ReportType: "url", ResourceIdentifier: "https://a.example/?q=<1>&r=\u00e9"},
		{Malicious: true, ReportType: "package", ResourceIdentifier: th.ResourceIdentifier, Ecosystem: &eco, ThreatCount: 3, Details: (&Server{}).toRecord(th, core.Principal{})},
		{Malicious: true, ReportType: "package", ResourceIdentifier: th.ResourceIdentifier, ThreatCount: 1, Details: json.RawMessage(rendered)},
		{Malicious: true, ReportType: "domain", ResourceIdentifier: "x.example", ThreatCount: 2, Details: json.RawMessage(rendered), Message: "named\tas an indicator", MatchedAs: "indicator"},
		// Read from the spill, with what the community says spliced in as
		// the answer is written.
		{Malicious: true, ReportType: "package", ResourceIdentifier: th.ResourceIdentifier, ThreatCount: 1, Details: splicedRecord{base: rendered}},
		{Malicious: true, ReportType: "package", ResourceIdentifier: th.ResourceIdentifier, ThreatCount: 4, Details: splicedRecord{base: rendered,
			community: core.Community{Sightings: core.SightingCounts{Seen: 7, FalsePositive: 1, LastSeen: at}, Confidence: 64, Disputed: true,
				Campaigns: []core.CampaignRef{{ID: "c1", Name: "<Shai-Hulud> & \"co\""}}}}},
	} {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(r); err != nil {
			t.Fatal(err)
		}
		got, err := r.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got)+"\n" != want.String() {
			t.Fatalf("\n got %s\nwant %s", got, want.String())
		}
	}
}
