package core

import "context"

// ImportRecord is one upstream record to ingest: a report with provenance
// (Threat.Source, UpstreamID, UpstreamModified; VerifiedAt = the upstream
// publication time), or a withdrawal of an earlier one.
type ImportRecord struct {
	Threat    Threat
	Withdrawn bool
}

// Import results.
const (
	ImportCreated   = "imported"  // a new verified report
	ImportUpdated   = "updated"   // a newer upstream version, applied as an approved revision
	ImportUnchanged = "unchanged" // already imported at this upstream version
	ImportWithdrawn = "withdrawn" // withdrawn upstream: our report is rejected (withdrawn)
	ImportAttached  = "attached"  // matched a live community report: attached as a revision
	ImportSkipped   = "skipped"   // could not be applied; Reason says why
)

// ImportOutcome is what became of one ImportRecord.
type ImportOutcome struct {
	UpstreamID string
	Result     string
	ThreatID   string
	Reason     string
}

// SourceItem is one item a source yields: a record, or a skipped input.
type SourceItem struct {
	Record *ImportRecord
	// Skipped names an input (file, record) that could not be mapped, and why.
	Skipped, Reason string
	// FilesDone/FilesTotal report progress when non-zero.
	FilesDone, FilesTotal int
}

// Source is the port to a source plugin: it reads paths and yields items.
type Source interface {
	Read(ctx context.Context, paths []string, settings map[string]string, fn func(SourceItem) error) error
}

// SourceReviewer is the system reviewer an import acts as ("osv-import").
func SourceReviewer(source string) string { return source + "-import" }

// ImportSummary counts what an ingestion run did.
type ImportSummary struct {
	Counts map[string]int // by result: imported, updated, unchanged, withdrawn, attached, skipped
	// Skipped lists "input or record: reason" for everything skipped.
	Skipped []string
}

// ImportProgress is reported as the run advances.
type ImportProgress struct {
	FilesDone, FilesTotal int
	Records               int
}

// importBatch is how many records one storage call (one transaction) takes.
const importBatch = 500

// Ingest reads src for paths and applies its records to store in batches,
// as the system reviewer <source>-import. progress may be nil.
func Ingest(ctx context.Context, store Store, src Source, source string, paths []string, settings map[string]string, progress func(ImportProgress)) (ImportSummary, error) {
	sum := ImportSummary{Counts: map[string]int{}}
	var p ImportProgress
	// One goroutine writes batches, in order, while the next one is read:
	// the source's reading and decoding overlaps the storage transaction
	// instead of waiting for it. Outcomes are counted by the writer; sum
	// is read only after it has finished.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan []ImportRecord, 1)
	written := make(chan error, 1)
	var skipped []string
	counts := map[string]int{}
	go func() {
		for batch := range batches {
			if ctx.Err() != nil {
				continue // drain after a failure
			}
			outcomes, err := store.ImportThreats(ctx, batch, SourceReviewer(source))
			if err != nil {
				cancel(err)
				continue
			}
			for _, o := range outcomes {
				counts[o.Result]++
				if o.Result == ImportSkipped {
					skipped = append(skipped, o.UpstreamID+": "+o.Reason)
				}
			}
		}
		written <- context.Cause(ctx)
	}()
	batch := make([]ImportRecord, 0, importBatch)
	send := func() error {
		if len(batch) == 0 {
			return nil
		}
		select {
		case batches <- batch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		batch = make([]ImportRecord, 0, importBatch)
		return nil
	}
	err := src.Read(ctx, paths, settings, func(it SourceItem) error {
		switch {
		case it.Record != nil:
			batch = append(batch, *it.Record)
			p.Records++
			if len(batch) >= importBatch {
				return send()
			}
		case it.Skipped != "":
			sum.Counts[ImportSkipped]++
			sum.Skipped = append(sum.Skipped, it.Skipped+": "+it.Reason)
		case it.FilesTotal > 0:
			p.FilesDone, p.FilesTotal = it.FilesDone, it.FilesTotal
			if progress != nil {
				progress(p)
			}
		}
		return nil
	})
	if err == nil {
		err = send()
	}
	close(batches)
	if werr := <-written; werr != nil {
		// A storage failure is the cause: the source only saw the cancel.
		err = werr
	}
	for k, n := range counts {
		sum.Counts[k] += n
	}
	sum.Skipped = append(sum.Skipped, skipped...)
	return sum, err
}
