package storage

import (
	"testing"
	"time"
)

// parseStamp reads SQLite's text timestamps as time.Parse would, on the
// fast path (UTC as bun writes it) and off it.
func TestParseStamp(t *testing.T) {
	for _, s := range []string{
		"2024-01-01 00:00:00+00:00", "2026-11-22 21:53:59.123456+00:00", "2026-02-28 23:59:59.1+00:00",
		"2024-02-29 12:00:00.999999999+00:00", "2026-11-22T21:53:59.5Z", "2026-11-22 23:53:59.25+02:00",
	} {
		got, err := parseStamp(s)
		want, werr := time.Parse("2006-01-02 15:04:05.999999999Z07:00", s)
		if werr != nil {
			want, werr = time.Parse(time.RFC3339Nano, s)
		}
		if err != nil || werr != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("parseStamp(%q) = %v, %v; want %v (%v)", s, got, err, want, werr)
		}
	}
	for _, s := range []string{"", "2026-02-30 00:00:00+00:00", "2026-13-01 00:00:00+00:00", "2026-11-22 21:53:59.+00:00",
		"2026-11-22 21:5x:59+00:00", "yesterday"} {
		if got, err := parseStamp(s); err == nil {
			t.Errorf("parseStamp(%q) = %v, want an error", s, got)
		}
	}
}
