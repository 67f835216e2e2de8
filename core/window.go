package core

import (
	"strings"
	"time"
)

// Window is how an endpoint reads a time window from its since, until and
// hours parameters (docs/api/paid.md): since (RFC 3339) up to until (or
// now), or the last hours (1–24), or by default the last Default; never
// longer than Max. The paid feed takes until and windows up to
// limits.feed_max_window; the STIX and Anomali window exports take since or
// hours within the last 24 hours.
type Window struct {
	Default time.Duration
	Max     time.Duration
	// Until says whether until may be given.
	Until bool
}

// Parse returns the window [from, to] the parameters name at now, or a 400
// naming the parameter at fault.
func (w Window) Parse(now time.Time, since, until, hours string) (from, to time.Time, err error) {
	now = now.UTC()
	if hours != "" && (since != "" || until != "") {
		either := "since"
		if w.Until {
			either = "since/until"
		}
		return from, to, Invalid("hours", "give either hours or %s, not both", either)
	}
	if since == "" {
		if until != "" {
			return from, to, Invalid("since", "is required with until")
		}
		d := w.Default
		if hours != "" {
			h, err := ParseWhole("hours", strings.TrimSpace(hours), 1, 24)
			if err != nil {
				return from, to, err
			}
			d = time.Duration(h) * time.Hour
		}
		return now.Add(-d), now, nil
	}
	if from, err = time.Parse(time.RFC3339Nano, since); err != nil {
		return from, to, Invalid("since", "must be an RFC 3339 timestamp, e.g. 2026-11-20T00:00:00Z")
	}
	to = now
	if until != "" {
		if to, err = time.Parse(time.RFC3339Nano, until); err != nil {
			return from, to, Invalid("until", "must be an RFC 3339 timestamp, e.g. 2026-11-21T00:00:00Z")
		}
		if !from.Before(to) {
			return from, to, Invalid("until", "must be after since")
		}
	} else if !from.Before(to) {
		return from, to, Invalid("since", "must be in the past")
	}
	if to.Sub(from) > w.Max {
		return from, to, Invalid("since", "the window is longer than the maximum of %s", w.Max)
	}
	return from.UTC(), to.UTC(), nil
}
