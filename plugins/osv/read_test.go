package osv

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// osvArchive writes n minimal OSV records into a zip, plus one entry that
// is not OSV at position bad.
func osvArchive(t *testing.T, n, bad int) string {
	return writeZip(t, n, zip.Deflate, func(i int) (string, string) {
		name := fmt.Sprintf("MAL-T-%04d.json", i)
		if i == bad {
			return name, `{"id": 12`
		}
		return name, fmt.Sprintf(`{"id":"MAL-T-%04d","published":"2024-01-01T00:00:00Z","modified":"2024-01-02T00:00:00Z","summary":"Malicious code in pkg-%04d",
			"affected":[{"package":{"ecosystem":"npm","name":"pkg-%04d"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}]}]}`, i, i, i)
	})
}

// Records come out in archive order although parsed in parallel; a bad
// entry is skipped in its place; progress counts every entry.
func TestReadOrderAndSkips(t *testing.T) {
	const n = 600
	path := osvArchive(t, n, 250)
	var got []string
	var skipped []string
	last := core.SourceItem{}
	err := Source{Now: func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }}.Read(context.Background(), []string{path}, nil, func(it core.SourceItem) error {
		switch {
		case it.Record != nil:
			got = append(got, it.Record.Threat.UpstreamID)
		case it.Skipped != "":
			skipped = append(skipped, fmt.Sprintf("%s after %d", it.Skipped, len(got)))
		default:
			last = it
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n-1 || len(skipped) != 1 || skipped[0] != path+"!MAL-T-0250.json after 250" {
		t.Fatalf("%d records, skipped %q", len(got), skipped)
	}
	for i, id := range got {
		want := i
		if i >= 250 {
			want = i + 1
		}
		if id != fmt.Sprintf("MAL-T-%04d", want) {
			t.Fatalf("record %d is %s", i, id)
		}
	}
	if last.FilesDone != n || last.FilesTotal != n {
		t.Fatalf("last progress %+v", last)
	}
}

// The caller's error ends the run at once and is returned; so does
// cancellation. Neither hangs on the parallel readers.
func TestReadStops(t *testing.T) {
	path := osvArchive(t, 600, -1)
	stop := errors.New("enough")
	seen := 0
	err := Source{}.Read(context.Background(), []string{path}, nil, func(it core.SourceItem) error {
		if it.Record != nil {
			if seen++; seen == 10 {
				return stop
			}
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 10 {
		t.Fatalf("err %v after %d records", err, seen)
	}
	ctx, cancel := context.WithCancel(context.Background())
	seen = 0
	err = Source{}.Read(ctx, []string{path}, nil, func(it core.SourceItem) error {
		if it.Record != nil {
			if seen++; seen == 10 {
				cancel()
			}
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || seen > 10+256 {
		t.Fatalf("err %v after %d records", err, seen)
	}
}
