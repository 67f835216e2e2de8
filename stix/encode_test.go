package stix

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
	"github.com/threatd/threatd/core/ioc"
	"github.com/threatd/threatd/plugins/osv"
)

// sameAsEncodingJSON fails unless AppendJSON renders o as encoding/json
// renders the same map.
func sameAsEncodingJSON(t *testing.T, o Object) bool {
	t.Helper()
	want, err := json.Marshal(map[string]any(o))
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendJSON(nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("AppendJSON:\n%s\nencoding/json:\n%s", got, want)
		return false
	}
	return true
}

func TestAppendJSONIsEncodingJSON(t *testing.T) {
	for _, o := range append(SharedObjects("threatd <&> \u2028 \"x\""), RecordObjects(sample(), "threatd")...) {
		sameAsEncodingJSON(t, o)
	}
	hostile := Object{
		"plain": "abc", "html": "<script>alert(1)</script> & more", "quote": `a"b\c`, "control": "a\x00b\tc\nd\x1f",
		"unicode": "héllo 世界 \u2028\u2029 😀", "invalid": "a\xffb\xc3", "amp": "fish & chips", "gt": "a > b", "del": "a\x7fb", "empty": "", "true": true, "false": false,
		"int": 85, "negative": -3, "int64": int64(1) << 40, "float": 0.5, "nil": nil, "strings": []string{"a", "<b>", ""},
		"no strings": []string(nil), "empty strings": []string{}, "maps": []map[string]any{{"z": 1, "a": "x"}, {}},
		"nested":  map[string]any{"b": map[string]any{"d": []any{"x", 1, true, nil}, "c": Object{"k": "v"}}},
		"key <&>": "v", "": "empty key", "time": time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
	}
	sameAsEncodingJSON(t, hostile)
	b, err := json.Marshal([]Object{hostile, nil})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal([]map[string]any{hostile, nil})
	if !bytes.Equal(b, want) {
		t.Errorf("a slice of objects through MarshalJSON:\n%s\nwant\n%s", b, want)
	}
}

// writerSame fails unless AppendRecordObjects writes r's objects as
// encoding/json renders the reference mapping's (reference_test.go).
func writerSame(t *testing.T, r Record) bool {
	t.Helper()
	objs := RecordObjects(r, "threatd")
	want, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	got := AppendRecordObjects([]byte("x"), r, IdentityID("threatd"))
	if !bytes.Equal(got[1:], want) || got[0] != 'x' {
		t.Errorf("AppendRecordObjects:\n%s\nthe mapping through encoding/json:\n%s", got, want)
		return false
	}
	return true
}

// TestWriterIsTheMapping: the objects a record is written as are the
// mapping's, byte for byte, in every shape a record takes: community
// signals or none, sightings, a dispute, campaigns, withdrawn, legacy ids,
// no tags or indicators, hostile text.
func TestWriterIsTheMapping(t *testing.T) {
	changed := *at("2026-11-20T08:00:00Z")
	camps := []core.CampaignRef{
		{ID: "8d1c4f7e-0a3b-4c5d-9e6f-7a8b9c0d1e2f", Name: "Shai-Hulud <&>", Description: "An npm worm \u2028 \"quoted\"",
			CreatedAt: *at("2026-09-15T00:00:00Z"), UpdatedAt: *at("2026-09-16T00:00:00Z")},
		{ID: "9e2d5f8a-1b4c-4d6e-8f70-8b9cad0e1f30", Name: "older", CreatedAt: *at("2026-09-15T00:00:00Z"), UpdatedAt: *at("2026-09-01T00:00:00Z")},
	}
	variants := map[string]func(*Record){
		"plain": func(*Record) {},
		"community": func(r *Record) {
			r.Community = core.Community{Confidence: 137, Disputed: true, ChangedAt: changed, Campaigns: camps,
				Sightings: core.SightingCounts{Seen: 1_234_567_890_123, FalsePositive: 1, Expired: 0, LastSeen: *at("2026-11-19T23:59:00Z"), UpdatedAt: changed}}
		},
		"community before the report": func(r *Record) {
			r.Community = core.Community{Confidence: -5, ChangedAt: *at("2020-01-01T00:00:00Z"),
				Sightings: core.SightingCounts{Expired: 2, UpdatedAt: *at("2020-01-01T00:00:00Z")}}
		},
		"withdrawn": func(r *Record) {
			r.Threat.Status = core.StatusRejected
			r.Community = core.Community{Confidence: 80, ChangedAt: changed, Campaigns: camps, Sightings: core.SightingCounts{Seen: 3}}
		},
		"legacy ids": func(r *Record) { r.Threat.LegacySTIXIDs = true },
		"bare": func(r *Record) {
			r.Threat.Registry, r.Threat.Details.Tags, r.Threat.Details.SeverityLevel = "", nil, ""
			r.Threat.Details.OSVAdvisoryURL, r.Threat.Details.EvidenceReferences, r.Threat.Details.ThreatDescription = "", " | ", ""
			r.Threat.VerifiedAt, r.Threat.Details.FirstSeen = nil, nil
			r.IOCs = nil
		},
		"last seen, no first": func(r *Record) {
			r.Threat.Details.FirstSeen, r.Threat.Details.LastSeen = nil, at("2026-11-03T00:00:00Z")
		},
		"last seen before first": func(r *Record) { r.Threat.Details.LastSeen = at("2026-10-01T00:00:00Z") },
		"hostile": func(r *Record) {
			r.Threat.ResourceIdentifier = "<script>\"x\\y</script> \u2028 héllo \xff"
			r.Threat.Details.ThreatDescription = "first <line> & \"more\"\nsecond\x00 line"
			r.Threat.Details.Tags = []string{"RAT", "Stealer", "<b>", "rat"}
			r.Threat.Details.EvidenceReferences = "https://a.example/?q=<&> | https://b.example/\"x\""
			for i := range r.IOCs {
				r.IOCs[i].Origin = "payload <&>"
				r.IOCs[i].Confidence = 40 + i
			}
		},
		"updated before created": func(r *Record) {
			r.Threat.UpdatedAt, r.Threat.VerifiedAt = r.Threat.CreatedAt.Add(-time.Hour), nil
		},
	}
	for name, change := range variants {
		r := sample()
		r.IOCs = append([]ioc.IOC(nil), r.IOCs...)
		change(&r)
		if !writerSame(t, r) {
			t.Errorf("variant %q differs", name)
		}
	}
}

// On every real report (the 29,604 OSV malicious-package reports), each
// object renders byte for byte as encoding/json renders it, and the
// writer writes the same bytes: the TAXII collections and the bundles
// serve these bytes.
func TestAppendJSONOnRealReports(t *testing.T) {
	zips := coretest.OSVArchives(t)
	reports, objects, different, written := 0, 0, 0, 0
	err := osv.Source{Now: time.Now}.Read(context.Background(), zips, nil, nil, func(it core.SourceItem) error {
		if it.Record == nil {
			return nil
		}
		th := it.Record.Threat
		th.ID, th.Status, th.CreatedAt, th.UpdatedAt = "0198c1a2-3b4c-7d5e-8f60-718293a4b5c6", core.StatusVerified, time.Unix(1.7e9, 0), time.Unix(1.7e9, 0)
		reports++
		r := Record{Threat: th, IOCs: core.ExtractIOCs(th)}
		for _, o := range RecordObjects(r, "threatd") {
			objects++
			if different < 5 && !sameAsEncodingJSON(t, o) {
				different++
			}
		}
		if written < 5 && !writerSame(t, r) {
			written++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reports, %d objects, %d rendered differently, %d reports written differently", reports, objects, different, written)
	if reports < 29_000 || different > 0 || written > 0 {
		t.Fatalf("%d reports read (29,604 expected), %d objects rendered differently, %d reports written differently", reports, different, written)
	}
}

// BenchmarkRecordObjects: one report's objects (a malware, its sighting
// and an indicator and relationship for each of its indicators) as the
// TAXII collections render them, written straight to JSON ("writer"), and
// built as maps and rendered by AppendJSON as they were before ("maps",
// the reference in the same run).
func BenchmarkRecordObjects(b *testing.B) {
	r := sample()
	r.Community = core.Community{Confidence: 60, Sightings: core.SightingCounts{Seen: 12}}
	identity := IdentityID("threatd")
	b.Run("writer", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = AppendRecordObjects(buf[:0], r, identity)
		}
	})
	b.Run("maps", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for _, o := range RecordObjects(r, "threatd") {
				var err error
				if buf, err = AppendJSON(buf, o); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// FuzzWriterIsTheMapping: whatever text a report holds (invalid UTF-8,
// quotes, HTML, line separators, control characters), the writer writes
// its objects as encoding/json renders the reference mapping's.
func FuzzWriterIsTheMapping(f *testing.F) {
	f.Add("evil-pkg", "npm", "Steals tokens\nsecond line", "token-stealer", "https://a.example/x | b", "https://evil.example/c", "payload", "Shai-Hulud", "critical", 37, int64(12), false)
	f.Add("<script>\"x\\y</script>", "", "\u2028 héllo \xff\xc3", "RAT", " | ", "a'b\\c", "", "", "", -4, int64(0), true)
	f.Add("", "pypi", "", "", "", "", "osv.iocs", "\x00\x1f\x7f", "low", 150, int64(1_000_000_000_000), false)
	f.Fuzz(func(t *testing.T, resource, registry, description, tag, evidence, url, origin, campaign, severity string, confidence int, seen int64, withdrawn bool) {
		r := sample()
		th := &r.Threat
		th.ResourceIdentifier, th.Registry = resource, registry
		th.Details.ThreatDescription, th.Details.EvidenceReferences = description, evidence
		th.Details.Tags, th.Details.SeverityLevel = []string{tag, "rat"}, core.Severity(severity)
		if withdrawn {
			th.Status = core.StatusRejected
		}
		r.IOCs = []ioc.IOC{{Type: "url", Value: url, Origin: origin, Confidence: confidence},
			{Type: "package", Value: resource, Detail: registry, Versions: []string{tag}, Origin: origin}}
		r.Community = core.Community{Confidence: confidence, Disputed: seen%2 == 0,
			Sightings: core.SightingCounts{Seen: seen, FalsePositive: seen / 3, Expired: -seen},
			Campaigns: []core.CampaignRef{{ID: "8d1c4f7e-0a3b-4c5d-9e6f-7a8b9c0d1e2f", Name: campaign, Description: description}}}
		writerSame(t, r)
	})
}
