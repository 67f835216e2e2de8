package api

import (
	"slices"
	"testing"
)

func TestHighestRelease(t *testing.T) {
	for _, c := range []struct {
		versions []string
		prefix   string
		want     string
	}{
		{[]string{"1.0.0", "1.10.0", "1.9.0", "2.0.0-beta.1"}, "v", "1.10.0"},
		{[]string{"2.0.0-beta.1", "2.0.0-alpha"}, "v", "2.0.0-beta.1"},
		{[]string{"v1.0.0", "v1.2.0", "v1.3.0-rc.1", "not-semver"}, "", "v1.2.0"},
		{[]string{"latest", "x"}, "v", ""},
		{nil, "", ""},
	} {
		if got := highestRelease(slices.Values(c.versions), c.prefix); got != c.want {
			t.Errorf("%v: %q, want %q", c.versions, got, c.want)
		}
	}
}
