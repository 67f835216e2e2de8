package osv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
// 3.1-3.4 GB (the text copied per package); 380,000 indicators did not
// finish in 150 s. Read now shares the text, caps the indicators, and keeps
// its heap bounded while it yields the 10,000 reports one by one.
func TestHostileRecordBoundedMemory(t *testing.T) {
	path := hostileRecord(t, 10_000, 0)
	if fi, _ := os.Stat(path); fi.Size() > maxRecordBytes {
		t.Fatalf("the test file (%d bytes) exceeds the per-file limit", fi.Size())
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak uint64
	n := 0
	err := Source{Now: time.Now}.Read(context.Background(), []string{path}, nil, nil, func(it core.SourceItem) error {
		if it.Record == nil {
			if it.Skipped != "" {
				t.Fatalf("skipped: %s", it.Reason)
			}
			return nil
		}
		n++
		if n%500 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse-min(base, ms.HeapInuse))
		}
		if d := it.Record.Threat.Details; len([]rune(d.PayloadDescription)) != 200_000 {
			t.Fatalf("payload of %d characters, want cut to 200,000", len([]rune(d.PayloadDescription)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 10_000 {
		t.Fatalf("%d reports, want 10,000", n)
	}
	t.Logf("heap in use above the start while yielding 10,000 reports: peak %d MB", peak>>20)
	if peak > 128<<20 {
		t.Fatalf("peak heap %d MB for one record: the text is copied per package", peak>>20)
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
