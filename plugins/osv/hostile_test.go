package osv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// hostileRecord is one OSV file built to hurt: a details text over 200,000
// characters (multi-byte, so that cutting it must count runes), affected
// packages by the thousand, and indicators by the hundred thousand.
func hostileRecord(t *testing.T, affected, iocs int) string {
	t.Helper()
	aff := make([]map[string]any, affected)
	for i := range aff {
		aff[i] = map[string]any{"package": map[string]any{"ecosystem": "npm", "name": fmt.Sprintf("hostile-%05d", i)}, "versions": []string{"1.0.0"}}
	}
	list := make([]string, iocs)
	for i := range list {
		list[i] = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}
	rec := map[string]any{"id": "MAL-HOSTILE-1", "published": "2025-01-01T00:00:00Z", "modified": "2025-01-02T00:00:00Z",
		"summary": "Malicious code", "details": strings.Repeat("données volées ", 14_000), "affected": aff,
		"database_specific": map[string]any{"iocs": map[string]any{"ips": list}}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "MAL-HOSTILE-1.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// One record with a 200 KB details and 10,000 affected packages took
// 3.1-3.4 GB (the text copied per package), and once shared in memory still
// became 10,000 reports of 200 KB each in the database (a 469 KB record of
// 5,000 packages became a 1 GB database). Such a record is skipped with its
// reason: over import.max_affected, and, when that is raised, by the growth
// guard (its reports would store over 20 times its size). A record of 1,000
// packages with a short text is imported whole, within the bound.
func TestHostileRecordIsRefused(t *testing.T) {
	read := func(path string, settings map[string]string) (reports int, reasons []string) {
		t.Helper()
		err := Source{Now: time.Now}.Read(context.Background(), []string{path}, settings, nil, func(it core.SourceItem) error {
			if it.Record != nil {
				reports++
			} else if it.Skipped != "" {
				reasons = append(reasons, it.Reason)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return reports, reasons
	}
	path := hostileRecord(t, 10_000, 0)
	if fi, _ := os.Stat(path); fi.Size() > maxRecordBytes {
		t.Fatalf("the test file (%d bytes) exceeds the per-file limit", fi.Size())
	}
	if n, why := read(path, nil); n != 0 || len(why) != 1 || !strings.Contains(why[0], "MAL-HOSTILE-1: 10000 affected packages, more than import.max_affected (1000)") {
		t.Fatalf("10,000 packages: %d reports, %q", n, why)
	}
	if n, why := read(path, map[string]string{"max_affected": "100000"}); n != 0 || len(why) != 1 ||
		!strings.Contains(why[0], "reports would store about") || !strings.Contains(why[0], "more than 20 times the record's") {
		t.Fatalf("10,000 packages, max_affected 100000: %d reports, %q", n, why)
	}
	if _, err := parseSettings(map[string]string{"max_affected": "0"}); err == nil || !strings.Contains(err.Error(), "import.max_affected") {
		t.Fatalf("max_affected 0: %v", err)
	}
	if _, err := parseSettings(map[string]string{"colour": "red"}); err == nil {
		t.Fatal("an unknown setting was accepted")
	}

	// 1,000 packages with a short text and their versions: imported whole,
	// and what its reports store stays within 20 times the file.
	aff := make([]map[string]any, 1000)
	for i := range aff {
		aff[i] = map[string]any{"package": map[string]any{"ecosystem": "npm", "name": fmt.Sprintf("wide-%04d", i)},
			"versions":          []string{"1.0.0", "1.0.1", "1.0.2"},
			"ranges":            []map[string]any{{"type": "SEMVER", "events": []map[string]string{{"introduced": "0"}}}},
			"database_specific": map[string]any{"source": fmt.Sprintf("https://github.com/ossf/malicious-packages/blob/main/osv/malicious/npm/wide-%04d/MAL-WIDE-1.json", i)}}
	}
	b, _ := json.Marshal(map[string]any{"id": "MAL-WIDE-1", "published": "2025-01-01T00:00:00Z", "modified": "2025-01-02T00:00:00Z",
		"summary": "Malicious code in many packages", "details": "A campaign published the same stealer under many names.", "affected": aff})
	wide := filepath.Join(t.TempDir(), "MAL-WIDE-1.json")
	if err := os.WriteFile(wide, b, 0o600); err != nil {
		t.Fatal(err)
	}
	stored := 0
	err := Source{Now: time.Now}.Read(context.Background(), []string{wide}, nil, nil, func(it core.SourceItem) error {
		if it.Skipped != "" {
			t.Fatalf("skipped: %s", it.Reason)
		}
		if it.Record != nil {
			stored += it.Record.ApproxSize() + reportOverhead
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stored > MaxGrowth*len(b) && stored > growthFloor {
		t.Fatalf("1,000 packages: %d bytes stored for a %d-byte record", stored, len(b))
	}
}

func TestManyIndicatorsAreCappedInLinearTime(t *testing.T) {
	path := hostileRecord(t, 1, 200_000)
	var payload string
	err := Source{Now: time.Now}.Read(context.Background(), []string{path}, nil, nil, func(it core.SourceItem) error {
		if it.Record != nil {
			payload = it.Record.Threat.Details.PayloadDescription
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(payload, fmt.Sprintf("(the first %d of 200000: threatd imports at most %d per record; %d skipped)", MaxIOCs, MaxIOCs, 200_000-MaxIOCs)) {
		t.Fatalf("no note of the skipped indicators in %.300q", payload[len(payload)-min(len(payload), 300):])
	}
	if strings.Contains(payload, "10[.]3[.]13[.]136") { // indicator 200,000: past the cap
		t.Fatal("an indicator past the cap was imported")
	}
}
