package apitest

import (
	"regexp"
	"testing"
	"time"
)

// ClearOfWindowEdge waits, when less than need is left of the current
// rate-limit window (the daemon's windows are fixed and aligned to the
// clock: every minute on the minute, every 15 minutes for log-ins), until
// the next window begins, so that a test counting against one budget is
// not split across two windows.
func ClearOfWindowEdge(t testing.TB, window, need time.Duration) {
	t.Helper()
	left := window - time.Duration(time.Now().UnixNano()%int64(window))
	if left < need {
		t.Logf("waiting %s for the next %s rate-limit window", left.Round(time.Millisecond), window)
		time.Sleep(left + 100*time.Millisecond)
	}
}

// Eventually retries check every 20 ms until it holds, and fails t once
// within has passed.
func Eventually(t testing.TB, what string, within time.Duration, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// publishedAgo is the age a quarantine refusal gives a version that a
// test's upstream dates ten minutes before the test began.
var publishedAgo = regexp.MustCompile(`was published 1[0-9]m ago`)

// TenMinutes reads the ages of s's quarantine refusals as "10m": the test
// upstreams date their fresh versions ten minutes back, and on a slow or
// loaded machine a test may reach its request minutes later (11m).
func TenMinutes(s string) string {
	return publishedAgo.ReplaceAllString(s, "was published 10m ago")
}
