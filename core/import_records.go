package core

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// DeriveAll derives the indicators of a batch's records (Derive), on every
// core: it is most of the CPU time of importing a report.
func DeriveAll(recs []ImportRecord) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(recs)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(recs); i = int(next.Add(1)) - 1 {
				if !recs[i].Withdrawn {
					recs[i].Threat = Derive(recs[i].Threat)
				}
			}
		})
	}
	wg.Wait()
}

// splitBySize cuts recs into runs of at most budget bytes (ApproxSize; a
// record larger than budget is a run of its own).
func splitBySize(recs []ImportRecord, budget int) [][]ImportRecord {
	var out [][]ImportRecord
	start, size := 0, 0
	for i := range recs {
		n := recs[i].ApproxSize()
		if i > start && size+n > budget {
			out = append(out, recs[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(recs) {
		out = append(out, recs[start:])
	}
	return out
}

// MaxImportRecordBytes bounds one import record's text (as ApproxSize
// counts it). A record validated by NewThreat stays well below it (its
// longest fields are 20,000 and 200,000 characters); a larger one is
// skipped with its reason, and the run goes on.
const MaxImportRecordBytes = 3 << 20

// MaxUpstreamIDBytes bounds an upstream id: it is part of an index key on
// every backend.
const MaxUpstreamIDBytes = 512

// ApproxSize is the size of r's text (Threat.ApproxSize). It bounds
// batches without marshalling them.
func (r ImportRecord) ApproxSize() int { return r.Threat.ApproxSize() }

// CheckImportRecord returns r's size as batches count it (ApproxSize) and
// why r cannot be sent to storage ("" when it can). Source plugins and the
// import apply the same rule.
func CheckImportRecord(r *ImportRecord) (size int, problem string) {
	size = r.ApproxSize()
	switch {
	case size > MaxImportRecordBytes:
		problem = fmt.Sprintf("the record is too large to import (%d bytes; at most %d)", size, MaxImportRecordBytes)
	case len(r.Threat.UpstreamID) > MaxUpstreamIDBytes:
		problem = fmt.Sprintf("the upstream id is longer than %d bytes", MaxUpstreamIDBytes)
	}
	return size, problem
}
