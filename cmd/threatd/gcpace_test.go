package main_test

import (
	"testing"
)

// TestServePacesItsCollector: the real daemon sets GOGC above the default
// for its small heap (go_gc_gogc_percent on /metrics), and leaves it
// alone when GOGC is set in its environment.
func TestServePacesItsCollector(t *testing.T) {
	t.Parallel()
	paced := newInstance(t, quiet).serve()
	if got := value(paced.scrape(), "go_gc_gogc_percent", nil); got <= 100 || got > 1000 {
		t.Errorf("a test daemon's heap is a few MiB: go_gc_gogc_percent %v, want between 101 and 1000", got)
	}
	in := newInstance(t, quiet)
	in.env = append(in.env, "GOGC=100")
	if got := value(in.serve().scrape(), "go_gc_gogc_percent", nil); got != 100 {
		t.Errorf("with GOGC=100 in the environment: go_gc_gogc_percent %v, want 100", got)
	}
}
