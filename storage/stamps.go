package storage

import (
	"fmt"
	"strings"
	"time"
)

// stampValue converts a scanned timestamp: a time from PostgreSQL, text
// from SQLite, NULL as the zero time.
func stampValue(v any) (time.Time, error) {
	switch v := v.(type) {
	case nil:
		return time.Time{}, nil
	case time.Time:
		return v.UTC(), nil
	case string:
		return parseStamp(v)
	case []byte:
		return parseStamp(string(v))
	}
	return time.Time{}, fmt.Errorf("unexpected %T", v)
}

// parseStamp parses a timestamp as bun writes it to SQLite,
// "2006-01-02 15:04:05[.999999]+00:00", without time.Parse's layout
// interpretation on the common UTC form (a million of them at start-up);
// anything else goes to time.Parse.
func parseStamp(s string) (time.Time, error) {
	if t, ok := parseUTCStamp(s); ok {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot parse %q", s)
}

func parseUTCStamp(s string) (time.Time, bool) {
	body, ok := strings.CutSuffix(s, "+00:00")
	if !ok {
		body, ok = strings.CutSuffix(s, "Z")
	}
	if !ok || len(body) < 19 || body[4] != '-' || body[7] != '-' || (body[10] != ' ' && body[10] != 'T') || body[13] != ':' || body[16] != ':' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for i := a; i < b; i++ {
			c := body[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	var f [6]int
	for i, r := range [6][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}} {
		if f[i], ok = num(r[0], r[1]); !ok {
			return time.Time{}, false
		}
	}
	nsec := 0
	if frac := body[19:]; frac != "" {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		n, ok := num(20, len(body))
		if !ok {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		nsec = n
	}
	if f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 || f[4] > 59 || f[5] > 59 {
		return time.Time{}, false
	}
	t := time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], nsec, time.UTC)
	if t.Day() != f[2] { // 31 February and the like
		return time.Time{}, false
	}
	return t, true
}
