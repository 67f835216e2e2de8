package osv

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// fullDir holds the 29,604 real OSV malicious-package reports as OSV
// publishes them (one all.zip per ecosystem), beside the repository.
const fullDir = "../../../shared/reference/osv-malicious-full"

var sourceLine = regexp.MustCompile(`(?mi)^\s*#+\s*Source:[^\n(]*\(\s*([0-9a-f]{64})\s*\)`)

// On every real report: no digest of a "## Source:" line (the digest of the
// upstream record, not of a file) is published as a file-hash indicator.
func TestRealReportsPublishNoSourceDigests(t *testing.T) {
	zips, _ := filepath.Glob(filepath.Join(fullDir, "*", "all.zip"))
	if len(zips) == 0 {
		if _, err := os.Stat(fullDir); err != nil {
			t.Skipf("no real reports at %s", fullDir)
		}
		t.Fatalf("no all.zip under %s", fullDir)
	}
	var records, sourceDigests, falseHashes, hashes int
	err := Source{Now: time.Now}.Read(context.Background(), zips, nil, nil, func(it core.SourceItem) error {
		if it.Record == nil {
			return nil
		}
		records++
		th := it.Record.Threat
		digests := map[string]bool{}
		for _, m := range sourceLine.FindAllStringSubmatch(th.Details.PayloadDescription, -1) {
			digests[strings.ToLower(m[1])] = true
		}
		sourceDigests += len(digests)
		for _, ioc := range core.ExtractIOCs(th) {
			if ioc.Type != core.IOCHash {
				continue
			}
			hashes++
			if digests[ioc.Value] {
				falseHashes++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reports from %d archives: %d source digests, %d file-hash indicators, %d of them source digests", records, len(zips), sourceDigests, hashes, falseHashes)
	if records < 29_000 || sourceDigests == 0 {
		t.Fatalf("read %d reports with %d source digests: the sample is not what this test expects", records, sourceDigests)
	}
	if falseHashes != 0 {
		t.Fatalf("%d source digests published as file-hash indicators", falseHashes)
	}
}
