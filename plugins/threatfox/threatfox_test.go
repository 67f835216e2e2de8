package threatfox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// export is a ThreatFox JSON export as abuse.ch publishes it (the full
// export's shape: IOC id → a list of one IOC, pretty-printed).
const export = `{
    "1401001": [
        {
            "ioc_value": "c2.tf-bad.example",
            "ioc_type": "domain",
            "threat_type": "botnet_cc",
            "malware": "win.cobalt_strike",
            "malware_alias": "Agentemis,BEACON,CobaltStrike,cobeacon",
            "malware_printable": "Cobalt Strike",
            "first_seen_utc": "2026-11-24 08:00:01",
            "last_seen_utc": null,
            "confidence_level": 100,
            "reference": "https://twitter.com/example/status/1",
            "tags": "CobaltStrike,c2",
            "anonymous": "0",
            "reporter": "abuse_ch"
        }
    ],
    "1401002": [
        {
            "ioc_value": "198.51.100.44:8443",
            "ioc_type": "ip:port",
            "threat_type": "botnet_cc",
            "malware": "elf.mirai",
            "malware_alias": null,
            "malware_printable": "Mirai",
            "first_seen_utc": "2026-11-24 09:00:00",
            "last_seen_utc": "2026-11-25 09:00:00",
            "confidence_level": 75,
            "reference": null,
            "tags": null,
            "anonymous": "0",
            "reporter": "someone"
        }
    ],
    "1401003": [
        {
            "ioc_value": "https://tf-bad.example/gate.php",
            "ioc_type": "url",
            "threat_type": "payload_delivery",
            "malware": "win.agent_tesla",
            "malware_alias": null,
            "malware_printable": "Agent Tesla",
            "first_seen_utc": "2026-11-24 10:00:00",
            "last_seen_utc": null,
            "confidence_level": 50,
            "reference": "",
            "tags": "AgentTesla",
            "anonymous": "1",
            "reporter": "anonymous"
        }
    ],
    "1401004": [
        {
            "ioc_value": "d41d8cd98f00b204e9800998ecf8427e",
            "ioc_type": "md5_hash",
            "threat_type": "payload",
            "malware": "win.agent_tesla",
            "malware_alias": null,
            "malware_printable": "Agent Tesla",
            "first_seen_utc": "2026-11-24 11:00:00",
            "last_seen_utc": null,
            "confidence_level": 50,
            "reference": null,
            "tags": null,
            "anonymous": "0",
            "reporter": "x"
        }
    ]
}
`

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "full.json")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func read(t *testing.T, path string, known core.Known) ([]core.ImportRecord, []string, int, error) {
	t.Helper()
	var (
		recs      []core.ImportRecord
		skipped   []string
		unchanged int
	)
	now := func() time.Time { return time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC) }
	err := Source{Now: now}.Read(context.Background(), []string{path}, nil, known, func(it core.SourceItem) error {
		switch {
		case it.Record != nil:
			recs = append(recs, *it.Record)
		case it.Skipped != "":
			skipped = append(skipped, it.Skipped+": "+it.Reason)
		}
		unchanged += it.Unchanged
		return nil
	})
	return recs, skipped, unchanged, err
}

// The export as ThreatFox publishes it: a domain, an ip:port (an ip
// report, its port in the text) and a URL become reports with their
// ThreatFox ids and pages; a hash is skipped with the reason.
func TestReadExport(t *testing.T) {
	recs, skipped, _, err := read(t, write(t, export), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || len(skipped) != 1 || !strings.Contains(skipped[0], "IOC 1401004") || !strings.Contains(skipped[0], "md5_hash") {
		t.Fatalf("%d records, skipped %q", len(recs), skipped)
	}
	d := recs[0].Threat
	if d.ReportType != core.TypeDomain || d.ResourceIdentifier != "c2.tf-bad.example" || d.UpstreamID != "1401001" || d.Source != SourceName ||
		d.Details.ThreatDescription != "ThreatFox: botnet cc (Cobalt Strike)" || strings.Join(d.Details.Tags, ",") != "threatfox,cobaltstrike,c2" ||
		d.Details.EvidenceReferences != "https://threatfox.abuse.ch/ioc/1401001/|https://twitter.com/example/status/1" {
		t.Errorf("the domain: %+v %+v", d, d.Details)
	}
	ip := recs[1].Threat
	if ip.ReportType != core.TypeIP || ip.ResourceIdentifier != "198.51.100.44" || !strings.Contains(ip.Details.PayloadDescription, "port 8443") ||
		!ip.UpstreamModified.Equal(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)) || !ip.VerifiedAt.Equal(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("the ip:port: %+v %+v", ip, ip.Details)
	}
	if u := recs[2].Threat; u.ReportType != core.TypeURL || u.ResourceIdentifier != "https://tf-bad.example/gate.php" {
		t.Errorf("the url: %+v", u)
	}
	known := func(_ context.Context, vs []core.UpstreamVersion) ([]bool, error) {
		out := make([]bool, len(vs))
		for i := range vs {
			out[i] = true
		}
		return out, nil
	}
	if recs, _, unchanged, err := read(t, write(t, export), known); err != nil || len(recs) != 0 || unchanged != 4 {
		t.Errorf("a re-import: %d records, %d unchanged, %v", len(recs), unchanged, err)
	}
}

// Hostile files: refused whole with a clear error, nothing yielded.
func TestHostileFiles(t *testing.T) {
	huge := `{"1": [{"ioc_value": "` + strings.Repeat("a", 2*MaxEntry+200<<10) + `.example", "ioc_type": "domain", "first_seen_utc": "2026-11-24 08:00:01"}]}`
	for name, c := range map[string]struct{ text, want string }{
		"an array":           {`[` + export + `]`, "it starts with ["},
		"broken":             {export[:len(export)-40], "not a ThreatFox JSON export"},
		"a list of two":      {`{"1": [{"ioc_type": "domain"}, {"ioc_type": "domain"}]}`, "a list of 2"},
		"an id not digits":   {`{"abc": [{"ioc_type": "domain"}]}`, `IOC id "abc"`},
		"a wrong field type": {`{"1": [{"ioc_value": 5}]}`, "IOC 1"},
		"a huge entry":       {huge, "longer than 65536 bytes"},
		"more after":         {export + `{}`, "more after its object"},
		"empty":              {"", "not a ThreatFox JSON export"},
		"a duplicate id": {`{"7": [{"ioc_value": "a.tf-bad.example", "ioc_type": "domain", "first_seen_utc": "2026-11-24 08:00:01"}], "8": [{"ioc_value": "b.tf-bad.example", "ioc_type": "domain", "first_seen_utc": "2026-11-24 08:00:01"}], "7": [{"ioc_value": "c.tf-bad.example", "ioc_type": "domain", "first_seen_utc": "2026-11-24 08:00:01"}]}`,
			`the id "7" appears twice (entry 1 and entry 3)`},
	} {
		recs, skipped, _, err := read(t, write(t, c.text), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || len(recs)+len(skipped) != 0 {
			t.Errorf("%s: %d records, %d skipped, error %v; want an error with %q and nothing yielded", name, len(recs), len(skipped), err, c.want)
		}
	}
}
