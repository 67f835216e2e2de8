package storage

import (
	"strings"
	"testing"
	"time"
)

// storage.settings.integrity_check: a duration of at least a minute, or
// off; anything else is refused with the key named; unknown settings too.
func TestOptionsFromSettings(t *testing.T) {
	env := func(string) string { return "" }
	for v, want := range map[string]time.Duration{"30m": 30 * time.Minute, "24h": 24 * time.Hour, "off": -1} {
		o, err := OptionsFromSettings(map[string]string{"integrity_check": v}, env)
		if err != nil || o.IntegrityEvery != want {
			t.Errorf("integrity_check %q: %v %v", v, o.IntegrityEvery, err)
		}
	}
	for _, v := range []string{"10s", "soon", "", "0"} {
		if _, err := OptionsFromSettings(map[string]string{"integrity_check": v}, env); err == nil || !strings.Contains(err.Error(), "storage.settings.integrity_check") {
			t.Errorf("integrity_check %q: %v", v, err)
		}
	}
	if _, err := OptionsFromSettings(map[string]string{"colour": "red"}, env); err == nil || !strings.Contains(err.Error(), "storage.settings.colour: unknown setting") {
		t.Errorf("an unknown setting: %v", err)
	}
}
