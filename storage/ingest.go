package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

// ImportThreats applies a batch of upstream records in one transaction:
//   - known by (source, upstream id): unchanged when not newer; withdrawn
//     upstream → rejected; newer → applied as an approved revision;
//   - else a live report with the same key (a community report): the record
//     is attached to it as an approved revision with its provenance;
//   - else a new report, verified by the source's system reviewer.
func (s *Store) ImportThreats(ctx context.Context, b core.ImportBatch) ([]core.ImportOutcome, error) {
	recs, actor := b.Records, b.Actor
	how := newHow{actor: actor, submitter: b.SubmitterID, pending: b.Pending}
	out := make([]core.ImportOutcome, len(recs))
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		// Find what already exists for the whole batch in two queries; new
		// reports are then written with multi-row inserts.
		known, live, err := s.existing(ctx, tx, recs)
		if err != nil {
			return err
		}
		var pending newReports
		seenKey, seenID := map[string]bool{}, map[string]bool{}
		for i, rec := range recs {
			t := rec.Threat
			id := t.Source + "\x00" + t.UpstreamID
			k, isKnown := known[id]
			// An upstream id given twice in the batch (two OSV files of
			// one id): the second is applied to what the first made.
			isKnown = isKnown || seenID[id]
			seenID[id] = true
			if isKnown && k.ID != "" && k.unchangedBy(t) {
				// The common case of a re-import: decided without another query.
				out[i] = core.ImportOutcome{UpstreamID: t.UpstreamID, Result: core.ImportUnchanged, ThreatID: k.ID}
				continue
			}
			if !isKnown && !live[t.CanonicalKey] && !seenKey[t.CanonicalKey] {
				if rec.Withdrawn {
					out[i] = core.ImportOutcome{UpstreamID: t.UpstreamID, Result: core.ImportSkipped, Reason: "withdrawn upstream and never imported"}
					continue
				}
				seenKey[t.CanonicalKey] = true
				out[i] = pending.add(t, how, s.now())
				continue
			}
			// Rare paths (updates, withdrawals, attachments, a key repeated
			// in the batch): write what is pending, then go record by record.
			if err := pending.flush(ctx, tx); err != nil {
				return err
			}
			o, err := s.importOne(ctx, tx, rec, how)
			if err != nil {
				return fmt.Errorf("%s: %w", t.UpstreamID, err)
			}
			o.UpstreamID = t.UpstreamID
			out[i] = o
		}
		return pending.flush(ctx, tx)
	})
	if err != nil {
		return nil, err
	}
	created := 0
	for _, o := range out {
		if o.Result == core.ImportCreated {
			created++
		}
	}
	s.noteImported(ctx, created)
	return out, nil
}

// knownRow is what the batch look-up reads of an already imported report.
type knownRow struct {
	ID               string     `bun:"id"`
	Source           string     `bun:"source"`
	UpstreamID       string     `bun:"upstream_id"`
	UpstreamModified *time.Time `bun:"upstream_modified"`
}

// unchangedBy reports whether importing t would change nothing: t is not
// newer than what was imported (the rule importOne applies too).
func (k knownRow) unchangedBy(t core.Threat) bool {
	return k.UpstreamModified != nil && t.UpstreamModified != nil && !t.UpstreamModified.After(*k.UpstreamModified)
}

// existing returns the already imported reports of a batch, by source and
// upstream id, and which canonical keys of live reports are already stored.
// Both queries read the unique indexes threats_upstream_key and
// threats_live_key: a bounded look-up per batch, whatever the table's size.
func (s *Store) existing(ctx context.Context, tx *txn, recs []core.ImportRecord) (map[string]knownRow, map[string]bool, error) {
	bySource := map[string][]string{}
	keys := make([]string, 0, len(recs))
	for _, r := range recs {
		bySource[r.Threat.Source] = append(bySource[r.Threat.Source], r.Threat.UpstreamID)
		keys = append(keys, r.Threat.CanonicalKey)
	}
	known, live := map[string]knownRow{}, map[string]bool{}
	if len(recs) == 0 {
		return known, live, nil
	}
	for source, ids := range bySource {
		var rows []knownRow
		if err := upstreamLookup(tx.NewSelect().TableExpr(tableUsing(s.dialect, "threats", "threats_upstream_key")).Column("id", "source", "upstream_id", "upstream_modified"), source, ids).
			Scan(ctx, &rows); err != nil {
			return nil, nil, err
		}
		for _, k := range rows {
			known[k.Source+"\x00"+k.UpstreamID] = k
		}
	}
	var liveKeys []string
	if err := liveKeyLookup(tx.NewSelect().TableExpr(tableUsing(s.dialect, "threats", "threats_live_key")).Column("canonical_key"), keys).Scan(ctx, &liveKeys); err != nil {
		return nil, nil, err
	}
	for _, k := range liveKeys {
		live[k] = true
	}
	return known, live, nil
}

// upstreamLookup restricts q to reports imported from source under ids (the
// equality implies the NOT NULL of the partial index threats_upstream_key).
func upstreamLookup(q *bun.SelectQuery, source string, ids []string) *bun.SelectQuery {
	return q.Where("source = ?", source).Where("upstream_id IN (?)", bun.List(ids))
}

// liveKeyLookup restricts q to live reports under keys, in the terms of the
// partial index threats_live_key.
func liveKeyLookup(q *bun.SelectQuery, keys []string) *bun.SelectQuery {
	return q.Where("canonical_key IN (?)", bun.List(keys)).Where("status IN ('pending', 'verified')")
}

// newHow is how an import stores its new reports: verified by actor, or
// pending review; attributed to submitter (a user id; "" = none).
type newHow struct {
	actor, submitter string
	pending          bool
}

// newReports accumulates new imported reports for multi-row inserts.
type newReports struct {
	threats []threatRow
	details []detailsRow
	events  []eventRow
}

// add queues a new report with its indicators of compromise.
func (n *newReports) add(t core.Threat, how newHow, now time.Time) core.ImportOutcome {
	// Time-ordered ids (UUIDv7): new rows append to the primary-key index
	// instead of landing at random pages of it.
	t.ID = uuid.Must(uuid.NewV7()).String()
	t.Status = core.StatusVerified
	t.CreatedAt, t.UpdatedAt = now, now
	t.SubmitterID = how.submitter
	actor := how.actor
	if how.pending {
		t.Status, t.VerifiedAt = core.StatusPending, nil
	} else {
		if t.VerifiedAt == nil {
			t.VerifiedAt = &now
		}
		t.VerifiedBy = actor
	}
	tr, dr := toThreatRow(t)
	to := string(t.Status)
	n.threats, n.details = append(n.threats, tr), append(n.details, dr)
	n.events = append(n.events, eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: t.ID, Action: "import", ToStatus: &to,
		ActorName: actor, Note: str("imported from " + t.Source + " " + t.UpstreamID), At: now})
	return core.ImportOutcome{UpstreamID: t.UpstreamID, Result: core.ImportCreated, ThreatID: t.ID}
}

func (n *newReports) flush(ctx context.Context, tx *txn) error {
	if len(n.threats) == 0 {
		return nil
	}
	for _, m := range []any{&n.threats, &n.details, &n.events} {
		// Returning("NULL"): bun would read back the columns written as
		// NULL (the empty optional fields) into the rows, which already
		// hold them: 14 % of the machine's CPU in an import of 200,000
		// records, a third of the single writer's.
		if _, err := tx.NewInsert().Model(m).Returning("NULL").Exec(ctx); err != nil {
			return err
		}
	}
	for i := range n.threats {
		tx.record(core.EntityThreat, n.threats[i].ID, "create", n.threats[i].CreatedAt)
		if n.threats[i].Status == string(core.StatusVerified) {
			tx.publishNew(&n.threats[i], core.ChangeVerified, n.details[i].IOCs)
		}
	}
	n.threats, n.details, n.events = n.threats[:0], n.details[:0], n.events[:0]
	return nil
}

// importOne applies one record.
func (s *Store) importOne(ctx context.Context, tx *txn, rec core.ImportRecord, how newHow) (core.ImportOutcome, error) {
	t, actor := rec.Threat, how.actor
	now := s.now()
	var existing threatRow
	err := lockRow(s.dialect, tx.NewSelect().Model(&existing).Relation("Details").
		Where("threat_row.source = ?", t.Source).Where("threat_row.upstream_id = ?", t.UpstreamID), "threat_row").Scan(ctx)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return core.ImportOutcome{}, err
	}
	if !found {
		// A live report for the same asset (e.g. a community submission)?
		err := lockRow(s.dialect, tx.NewSelect().Model(&existing).Relation("Details").
			Where("threat_row.canonical_key = ?", t.CanonicalKey).
			Where("threat_row.status IN (?, ?)", string(core.StatusPending), string(core.StatusVerified)), "threat_row").Scan(ctx)
		if err == nil {
			if core.OwnOSVRecord(t.UpstreamID, existing.ID) {
				// Our own community report, exported as OSV and read back.
				return core.ImportOutcome{Result: core.ImportUnchanged, ThreatID: existing.ID}, nil
			}
			if rec.Withdrawn {
				return core.ImportOutcome{Result: core.ImportSkipped, ThreatID: existing.ID, Reason: "withdrawn upstream; the matching report is not ours to withdraw"}, nil
			}
			if err := s.importRevision(ctx, tx, &existing, t, actor, now); err != nil {
				return core.ImportOutcome{}, err
			}
			return core.ImportOutcome{Result: core.ImportAttached, ThreatID: existing.ID}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return core.ImportOutcome{}, err
		}
		if rec.Withdrawn {
			return core.ImportOutcome{Result: core.ImportSkipped, Reason: "withdrawn upstream and never imported"}, nil
		}
		var n newReports
		o := n.add(t, how, now)
		return o, n.flush(ctx, tx)
	}
	if rec.Withdrawn && how.submitter != "" && deref(existing.SubmitterID) != how.submitter {
		// A report the source was attached to (a person's, or another
		// source's): the source's withdrawal (upstream, or --full) is not
		// the report's, which stands on its own.
		return core.ImportOutcome{Result: core.ImportSkipped, ThreatID: existing.ID,
			Reason: "withdrawn by " + t.Source + ", but the report is not one it created (it was attached to it): it stands"}, nil
	}
	if !rec.Withdrawn && existing.Status == string(core.StatusRejected) && existing.UpstreamModified == nil {
		// Perhaps withdrawn by an import with --full (which leaves no
		// upstream version, so that neither Known nor the batch look-up
		// takes the record for unchanged): listed again, it is restored.
		return s.restoreListed(ctx, tx, &existing, t, actor, now)
	}
	if existing.UpstreamModified != nil && t.UpstreamModified != nil && !t.UpstreamModified.After(*existing.UpstreamModified) {
		return core.ImportOutcome{Result: core.ImportUnchanged, ThreatID: existing.ID}, nil
	}
	if rec.Withdrawn {
		if existing.Status == string(core.StatusRejected) {
			return core.ImportOutcome{Result: core.ImportUnchanged, ThreatID: existing.ID}, nil
		}
		from := existing.Status
		// An upstream withdrawal keeps its version (the same record read
		// again is unchanged); an import with --full's has none and clears
		// the version, so that the record listed again is read in full
		// and restores the report (restoreListed).
		existing.Status, existing.UpdatedAt, existing.UpstreamModified = string(core.StatusRejected), now, t.UpstreamModified
		if _, err := tx.NewUpdate().Model(&existing).Column("status", "updated_at", "upstream_modified").WherePK().Exec(ctx); err != nil {
			return core.ImportOutcome{}, err
		}
		to := string(core.StatusRejected)
		action, note := "withdraw", "withdrawn upstream ("+t.UpstreamID+")"
		if t.UpstreamModified == nil {
			action, note = unlistAction, "no longer listed by "+t.Source+" ("+t.UpstreamID+"; an import with --full)"
		}
		ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: existing.ID, Action: action, FromStatus: &from, ToStatus: &to,
			ActorName: actor, Note: str(note), At: now}
		if _, err := tx.NewInsert().Model(&ev).Exec(ctx); err != nil {
			return core.ImportOutcome{}, err
		}
		tx.record(core.EntityThreat, existing.ID, "reject", now)
		if from == string(core.StatusVerified) {
			tx.publish(&existing, core.ChangeWithdrawn)
		}
		return core.ImportOutcome{Result: core.ImportWithdrawn, ThreatID: existing.ID}, nil
	}
	if err := s.importRevision(ctx, tx, &existing, t, actor, now); err != nil {
		return core.ImportOutcome{}, err
	}
	return core.ImportOutcome{Result: core.ImportUpdated, ThreatID: existing.ID}, nil
}

// unlistAction is the review event of a withdrawal by an import with
// --full (restoreListed undoes it, and only it).
const unlistAction = "unlist"

// restoreListed applies a record to its rejected report that has no
// upstream version: when the report's latest event is the withdrawal of
// an import with --full, the source lists it again, and it is restored
// to what it was (verified or pending) with the record applied as an
// approved revision. A report withdrawn any other way (upstream, by a
// reviewer) stays withdrawn and takes the record as an update.
func (s *Store) restoreListed(ctx context.Context, tx *txn, row *threatRow, t core.Threat, actor string, now time.Time) (core.ImportOutcome, error) {
	var last eventRow
	err := tx.NewSelect().Model(&last).Where("threat_id = ?", row.ID).Order("at DESC", "id DESC").Limit(1).Scan(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return core.ImportOutcome{}, err
	}
	if err != nil || last.Action != unlistAction || last.FromStatus == nil {
		if err := s.importRevision(ctx, tx, row, t, actor, now); err != nil {
			return core.ImportOutcome{}, err
		}
		return core.ImportOutcome{Result: core.ImportUpdated, ThreatID: row.ID}, nil
	}
	// Its subject may have been reported again meanwhile: the live key
	// is unique, and that report stands.
	var other []string
	if err := liveKeyLookup(tx.NewSelect().TableExpr(tableUsing(s.dialect, "threats", "threats_live_key")).Column("id"), []string{row.CanonicalKey}).
		Limit(1).Scan(ctx, &other); err != nil {
		return core.ImportOutcome{}, err
	}
	if len(other) > 0 {
		return core.ImportOutcome{Result: core.ImportSkipped, ThreatID: row.ID,
			Reason: "listed again, but the live report " + other[0] + " now covers its subject; this one stays withdrawn"}, nil
	}
	// The record first (a rejected report's revision publishes nothing),
	// then the status the withdrawal took away.
	if err := s.importRevision(ctx, tx, row, t, actor, now); err != nil {
		return core.ImportOutcome{}, err
	}
	to := *last.FromStatus
	row.Status, row.UpdatedAt = to, now
	if _, err := tx.NewUpdate().Model(row).Column("status", "updated_at").WherePK().Exec(ctx); err != nil {
		return core.ImportOutcome{}, err
	}
	from := string(core.StatusRejected)
	ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: row.ID, Action: "restore", FromStatus: &from, ToStatus: &to,
		ActorName: actor, Note: str("listed again by " + t.Source + " (" + t.UpstreamID + ")"), At: now}
	if _, err := tx.NewInsert().Model(&ev).Exec(ctx); err != nil {
		return core.ImportOutcome{}, err
	}
	tx.record(core.EntityThreat, row.ID, "restore", now)
	if to == string(core.StatusVerified) {
		tx.publish(row, core.ChangeVerified)
	}
	return core.ImportOutcome{Result: core.ImportRestored, ThreatID: row.ID}, nil
}

// importRevision applies an upstream version to a report as an approved
// revision: the upstream fields replace ours; provenance is recorded.
func (s *Store) importRevision(ctx context.Context, tx *txn, row *threatRow, t core.Threat, actor string, now time.Time) error {
	var last int
	if err := tx.NewSelect().Table("threat_revisions").ColumnExpr("coalesce(max(number), 0)").Where("threat_id = ?", row.ID).Scan(ctx, &last); err != nil {
		return err
	}
	patch := t.AsSubmission()
	patch.ReportType, patch.ResourceIdentifier, patch.Registry = nil, nil, nil
	rev := revisionRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: row.ID, Number: last + 1, AuthorName: actor,
		State: core.RevisionApproved, Changes: core.Patch{Submission: patch}, Note: str("upstream " + t.Source + " " + t.UpstreamID),
		CreatedAt: now, DecidedAt: &now, DecidedBy: &actor}
	if _, err := tx.NewInsert().Model(&rev).Exec(ctx); err != nil {
		return err
	}
	_, dr := toThreatRow(core.Threat{ID: row.ID, Details: t.Details, IOCs: t.IOCs})
	if _, err := tx.NewUpdate().Model(&dr).WherePK().Exec(ctx); err != nil {
		return err
	}
	row.Details = &dr
	cols := []string{"revision", "version", "updated_at", "upstream_modified", "all_versions", "severity_level"}
	row.Revision, row.UpdatedAt, row.UpstreamModified, row.AllVersions = rev.Number, now, t.UpstreamModified, t.AllVersions
	row.SeverityLevel = str(string(t.Details.SeverityLevel))
	row.Version++
	if row.Source == nil {
		row.Source, row.UpstreamID = &t.Source, &t.UpstreamID
		cols = append(cols, "source", "upstream_id")
	}
	if _, err := tx.NewUpdate().Model(row).Column(cols...).WherePK().Exec(ctx); err != nil {
		return err
	}
	ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: row.ID, RevisionID: &rev.ID, Action: "import-revision",
		ActorName: actor, Note: rev.Note, At: now}
	if _, err := tx.NewInsert().Model(&ev).Exec(ctx); err != nil {
		return err
	}
	tx.record(core.EntityThreat, row.ID, "update", now)
	if row.Status == string(core.StatusVerified) {
		tx.publish(row, core.ChangeRevised)
	}
	return nil
}
