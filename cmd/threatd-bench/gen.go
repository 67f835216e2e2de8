package main

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// genEpoch is the publication date of the first generated record; the
// others follow one minute apart, so that dates spread over about two years
// for a million records.
var genEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// benchName is the package name of generated record i: even records are
// npm packages, odd ones PyPI packages. The load generator draws hits from
// the same names.
func benchName(i int) (ecosystem, name string) {
	if i%2 == 0 {
		return "npm", fmt.Sprintf("bench-npm-%07d", i)
	}
	return "PyPI", fmt.Sprintf("bench-pypi-%07d", i)
}

// osvRecord is the part of an OSV record the generator writes.
type osvRecord struct {
	SchemaVersion    string         `json:"schema_version"`
	ID               string         `json:"id"`
	Modified         string         `json:"modified"`
	Published        string         `json:"published"`
	Summary          string         `json:"summary"`
	Details          string         `json:"details"`
	Affected         []osvAffected  `json:"affected"`
	References       []osvReference `json:"references"`
	DatabaseSpecific map[string]any `json:"database_specific"`
}

type osvAffected struct {
	Package struct {
		Ecosystem string `json:"ecosystem"`
		Name      string `json:"name"`
	} `json:"package"`
	Ranges []struct {
		Type   string              `json:"type"`
		Events []map[string]string `json:"events"`
	} `json:"ranges"`
}

type osvReference struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// genRecord returns generated record i: deterministic, every version
// affected (introduced 0, no fix), about the size of a real OSV report;
// one in ten names an exfiltration URL (c2-<i>.bench-exfil.example).
func genRecord(i int) osvRecord {
	eco, name := benchName(i)
	published := genEpoch.Add(time.Duration(i) * time.Minute)
	r := osvRecord{
		SchemaVersion: "1.5.0",
		ID:            fmt.Sprintf("MAL-BENCH-%07d", i),
		Published:     published.Format(time.RFC3339),
		Modified:      published.Add(time.Hour).Format(time.RFC3339),
		Summary:       fmt.Sprintf("Malicious code in %s (%s)", name, eco),
		Details: fmt.Sprintf("\n---\n_-= Per source details. Do not edit below this line.=-_\n\n## Source: bench (%064x)\n"+
			"The package %s runs a install-time script that downloads a second stage and exfiltrates environment variables, "+
			"SSH keys and cloud credentials to a remote server. Any computer that has this package installed or running "+
			"should be considered fully compromised. All secrets and keys stored on that computer should be rotated "+
			"immediately from a different computer.\n", i, name),
		References: []osvReference{{Type: "WEB", URL: fmt.Sprintf("https://example.org/advisories/%d", i)}},
		DatabaseSpecific: map[string]any{"malicious-packages-origins": []map[string]any{{
			"source": "bench", "id": fmt.Sprintf("BENCH-%d", i), "modified_time": published.Format(time.RFC3339),
		}}},
	}
	if i%10 == 0 {
		// One report in ten names where it sends what it steals, as real
		// reports do: a URL on a host of its own (a searchable indicator).
		r.Details += fmt.Sprintf("It posts them to `https://c2-%07d.bench-exfil.example/collect`.\n", i)
	}
	var a osvAffected
	a.Package.Ecosystem, a.Package.Name = eco, name
	a.Ranges = append(a.Ranges, struct {
		Type   string              `json:"type"`
		Events []map[string]string `json:"events"`
	}{Type: "SEMVER", Events: []map[string]string{{"introduced": "0"}}})
	r.Affected = []osvAffected{a}
	return r
}

// generate writes n records into a zip archive at path, one JSON file per
// record as OSV publishes them.
func generate(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	zw := zip.NewWriter(bw)
	for i := range n {
		rec := genRecord(i)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: rec.ID + ".json", Method: zip.Deflate, Modified: genEpoch})
		if err != nil {
			return err
		}
		if err := json.NewEncoder(w).Encode(rec); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}
