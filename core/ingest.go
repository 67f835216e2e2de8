package core

import (
	"context"
	"fmt"
	"sync"
	"time"
)

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
	ImportRestored  = "restored"  // listed again after an import with --full withdrew it: restored
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
	// Unchanged counts import records the source did not decode in full
	// because Known said the store already has them at their upstream
	// version: they count as unchanged.
	Unchanged int
	// Skipped names an input (file, record) that could not be mapped, and why.
	Skipped, Reason string
	// UpstreamID is a skipped record's upstream id when the source read
	// it: an import with --full counts the record as listed.
	UpstreamID string
	// FilesDone/FilesTotal report progress when non-zero.
	FilesDone, FilesTotal int
}

// Source is the port to a source plugin: it reads paths and yields items.
// known, when not nil, may be asked which records are already imported at
// their upstream version: a source that can read a record's upstream ids
// and modified time cheaply skips decoding those in full (a re-import).
type Source interface {
	Read(ctx context.Context, paths []string, settings map[string]string, known Known, fn func(SourceItem) error) error
}

// UpstreamVersion names one upstream record: the upstream ids of the import
// records it maps to, and its modified time.
type UpstreamVersion struct {
	Source   string
	IDs      []string
	Modified time.Time
}

// Known reports, for each record, whether every one of its upstream ids is
// already imported at its modified time or a newer one: importing it would
// change nothing (the rule ImportThreats applies).
type Known func(ctx context.Context, recs []UpstreamVersion) ([]bool, error)

// MaxImportedVersions bounds the ids of one Store.ImportedVersions call.
const MaxImportedVersions = 1000

// StoreKnown is the Known of a store, in calls of at most
// MaxImportedVersions ids per source.
func StoreKnown(store ImportStore) Known {
	return func(ctx context.Context, recs []UpstreamVersion) ([]bool, error) {
		bySource := map[string][]string{}
		for _, r := range recs {
			bySource[r.Source] = append(bySource[r.Source], r.IDs...)
		}
		stored := map[string]map[string]time.Time{}
		for source, ids := range bySource {
			m := map[string]time.Time{}
			for len(ids) > 0 {
				n := min(len(ids), MaxImportedVersions)
				got, err := store.ImportedVersions(ctx, VersionQuery{Source: source, IDs: ids[:n]})
				if err != nil {
					return nil, err
				}
				for id, t := range got {
					m[id] = t
				}
				ids = ids[n:]
			}
			stored[source] = m
		}
		out := make([]bool, len(recs))
		for i, r := range recs {
			out[i] = len(r.IDs) > 0
			for _, id := range r.IDs {
				t, ok := stored[r.Source][id]
				if !ok || r.Modified.After(t) {
					out[i] = false
					break
				}
			}
		}
		return out, nil
	}
}

// SourceReviewer is the system reviewer an import acts as ("osv-import").
func SourceReviewer(source string) string { return source + "-import" }

// ImportSummary counts what an ingestion run did.
type ImportSummary struct {
	Counts map[string]int // by result: imported, updated, unchanged, withdrawn, attached, restored, skipped
	// Skipped lists "input or record: reason" for everything skipped.
	Skipped []string
	// FullRefused says why an import with --full withdrew nothing ("" when
	// it did what it was asked).
	FullRefused string
}

// ImportProgress is reported as the run advances.
type ImportProgress struct {
	FilesDone, FilesTotal int
	Records               int
}

// Bounds of one storage call (one transaction) of an import: at most
// importBatch records and importBatchBytes of their text, so that a batch of
// long reports never exceeds what one plugin message carries (gRPC's 4 MiB:
// 500 reports with 200 KB payloads aborted the whole import).
const (
	importBatch      = 1000
	importBatchBytes = 1 << 20
	// importMessageBytes bounds a batch with its derived indicators
	// (ApproxSize counts them): a batch of text full of distinct
	// indicators is sent in parts.
	importMessageBytes = 2 << 20
)

// Trust levels of an import (ImportOptions.Trust).
const (
	TrustVerified = "verified"
	TrustPending  = "pending"
)

// ImportOptions are an import's choices (threatd import, sources:).
type ImportOptions struct {
	// Settings are the source plugin's settings.
	Settings map[string]string
	// Full withdraws the source's live reports the files no longer list,
	// once every file was read and written.
	Full bool
	// Trust is TrustVerified ("" too) or TrustPending: new reports wait
	// for review.
	Trust string
}

// CheckTrust refuses a trust level that is not verified or pending.
func CheckTrust(field, trust string) error {
	switch trust {
	case "", TrustVerified, TrustPending:
		return nil
	}
	return Invalid(field, "must be verified or pending (got %q)", trust)
}

// IngestStore is what an import needs of a store: the import methods and
// its source user.
type IngestStore interface {
	ImportStore
	SourceUsers
}

// Ingest reads src for paths and applies its records to store in batches,
// as the system reviewer <source>-import, attributed to the source user
// named source (SourceUser); with opts.Full, it then withdraws the
// source's reports no file listed (withdrawUnlisted). progress may be nil.
func Ingest(ctx context.Context, store IngestStore, src Source, source string, paths []string, opts ImportOptions, progress func(ImportProgress)) (ImportSummary, error) {
	if err := CheckTrust("trust", opts.Trust); err != nil {
		return ImportSummary{}, err
	}
	user, err := SourceUser(ctx, store, source)
	if err != nil {
		return ImportSummary{}, fmt.Errorf("the source user %s: %w", source, err)
	}
	// With Full: every upstream id the files list (asked of Known, read
	// as a record, or skipped with its id), and how many skipped inputs
	// had no id (then what the files list is not known).
	var listed *listing
	known := StoreKnown(store)
	if opts.Full {
		listed = &listing{ids: map[string]struct{}{}}
		inner := known
		known = func(ctx context.Context, recs []UpstreamVersion) ([]bool, error) {
			listed.mu.Lock()
			for _, r := range recs {
				for _, id := range r.IDs {
					listed.ids[id] = struct{}{}
				}
			}
			listed.mu.Unlock()
			return inner(ctx, recs)
		}
	}
	batchOf := func(recs []ImportRecord) ImportBatch {
		return ImportBatch{Records: recs, Actor: SourceReviewer(source), SubmitterID: user.ID, Pending: opts.Trust == TrustPending}
	}
	sum := ImportSummary{Counts: map[string]int{}}
	var p ImportProgress
	settings := opts.Settings
	// One goroutine writes batches, in order, while the next one is read:
	// the source's reading and decoding overlaps the storage transaction
	// instead of waiting for it. Outcomes are counted by the writer; sum
	// is read only after it has finished.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan []ImportRecord, 1)
	derived := make(chan []ImportRecord, 1)
	written := make(chan error, 1)
	var skipped []string
	counts := map[string]int{}
	// A second goroutine derives each batch's indicators (Derive, on every
	// core) while the writer stores the batch before it.
	go func() {
		defer close(derived)
		for batch := range batches {
			if ctx.Err() != nil {
				continue
			}
			DeriveAll(batch)
			for _, part := range splitBySize(batch, importMessageBytes) {
				derived <- part
			}
		}
	}()
	go func() {
		for batch := range derived {
			if ctx.Err() != nil {
				continue // drain after a failure
			}
			outcomes, err := store.ImportThreats(ctx, batchOf(batch))
			if err != nil {
				cancel(err)
				continue
			}
			skipped = tally(counts, skipped, outcomes)
		}
		written <- context.Cause(ctx)
	}()
	batch := make([]ImportRecord, 0, importBatch)
	size := 0
	send := func() error {
		if len(batch) == 0 {
			return nil
		}
		select {
		case batches <- batch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		batch, size = make([]ImportRecord, 0, importBatch), 0
		return nil
	}
	err = src.Read(ctx, paths, settings, known, func(it SourceItem) error {
		if listed != nil {
			listed.note(it)
		}
		switch {
		case it.Unchanged > 0:
			// Counted here, in order with the records around it.
			sum.Counts[ImportUnchanged] += it.Unchanged
			p.Records += it.Unchanged
		case it.Record != nil:
			p.Records++
			n, why := CheckImportRecord(it.Record)
			if why != "" {
				sum.Counts[ImportSkipped]++
				sum.Skipped = append(sum.Skipped, Shorten(it.Record.Threat.UpstreamID)+": "+why)
				return nil
			}
			if len(batch) > 0 && size+n > importBatchBytes {
				if err := send(); err != nil {
					return err
				}
			}
			batch, size = append(batch, *it.Record), size+n
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
	if err != nil || listed == nil {
		return sum, err
	}
	err = withdrawUnlisted(ctx, store, source, listed, batchOf, &sum)
	return sum, err
}

// tally counts outcomes by result and returns skipped with the skipped
// ones' "id: reason" added.
func tally(counts map[string]int, skipped []string, outcomes []ImportOutcome) []string {
	for _, o := range outcomes {
		counts[o.Result]++
		if o.Result == ImportSkipped {
			skipped = append(skipped, o.UpstreamID+": "+o.Reason)
		}
	}
	return skipped
}

// listing is what an import with --full saw the files list.
type listing struct {
	mu  sync.Mutex
	ids map[string]struct{}
	// unnamed counts skipped inputs without an upstream id.
	unnamed int
}

// note adds what an item says is listed.
func (l *listing) note(it SourceItem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case it.Record != nil:
		l.ids[it.Record.Threat.UpstreamID] = struct{}{}
	case it.Skipped != "" && it.UpstreamID != "" && len(it.UpstreamID) <= MaxUpstreamIDBytes:
		l.ids[it.UpstreamID] = struct{}{}
	case it.Skipped != "":
		l.unnamed++
	}
}

// withdrawUnlisted withdraws, after a whole run, the source's live reports
// (pending or verified) whose upstream id no file listed: read a page of
// MaxImportedVersions ids at a time, withdrawn in batches. When a skipped
// input had no upstream id, what the files list is not known and nothing
// is withdrawn (sum.FullRefused says why).
func withdrawUnlisted(ctx context.Context, store IngestStore, source string, l *listing, batchOf func([]ImportRecord) ImportBatch, sum *ImportSummary) error {
	if l.unnamed > 0 {
		sum.FullRefused = fmt.Sprintf("--full withdrew nothing: %s skipped without an upstream id, so which reports the files no longer list is not known (mend or remove them and import again)",
			Count(l.unnamed, "input was", "inputs were"))
		return nil
	}
	after := ""
	var gone []ImportRecord
	flush := func() error {
		if len(gone) == 0 {
			return nil
		}
		out, err := store.ImportThreats(ctx, batchOf(gone))
		if err != nil {
			return err
		}
		sum.Skipped = tally(sum.Counts, sum.Skipped, out)
		gone = gone[:0]
		return nil
	}
	for {
		ids, err := store.ImportedIDs(ctx, ImportedIDQuery{Source: source, After: after, Limit: MaxImportedVersions})
		if err != nil {
			return fmt.Errorf("--full: reading the imported reports: %w", err)
		}
		for _, id := range ids {
			if _, ok := l.ids[id]; !ok {
				gone = append(gone, ImportRecord{Threat: Threat{Source: source, UpstreamID: id}, Withdrawn: true})
			}
		}
		// Withdrawn after the page is read: the next page starts after
		// its last id whatever became of them.
		if len(gone) >= importBatch || len(ids) < MaxImportedVersions {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(ids) < MaxImportedVersions {
			return nil
		}
		after = ids[len(ids)-1]
	}
}
