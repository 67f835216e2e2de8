package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/analysis"
)

// analysisRow is one version's analysis: queued, leased, then done.
type analysisRow struct {
	bun.BaseModel `bun:"table:analyses"`

	Ecosystem   string     `bun:"ecosystem,pk"`
	Name        string     `bun:"name,pk"`
	Version     string     `bun:"version,pk"`
	State       string     `bun:"state,notnull"`
	QueuedAt    time.Time  `bun:"queued_at,notnull"`
	RequestedBy string     `bun:"requested_by,notnull"`
	Attempts    int        `bun:"attempts,notnull"`
	Holder      *string    `bun:"holder"`
	LeaseUntil  *time.Time `bun:"lease_until"`
	Digest      string     `bun:"digest,notnull"`
	Verdict     string     `bun:"verdict,notnull"`
	Result      *string    `bun:"result"`
	AnalyzedAt  *time.Time `bun:"analyzed_at"`
	ReportID    *string    `bun:"report_id"`
}

// maxAnalysisText bounds a queued name or version.
const maxAnalysisText = 1024

func (r analysisRow) record() (analysis.Entry, error) {
	rec := analysis.Entry{Job: analysis.Job{Ecosystem: r.Ecosystem, Name: r.Name, Version: r.Version, QueuedAt: r.QueuedAt.UTC(),
		RequestedBy: r.RequestedBy, Attempts: r.Attempts}, State: r.State, Digest: r.Digest, ReportID: deref(r.ReportID)}
	if r.AnalyzedAt != nil {
		rec.AnalyzedAt = r.AnalyzedAt.UTC()
	}
	if r.Result != nil {
		if err := json.Unmarshal([]byte(*r.Result), &rec.Result); err != nil {
			return rec, fmt.Errorf("the stored result of %s: %w", analysis.Key{Ecosystem: r.Ecosystem, Name: r.Name, Version: r.Version}.Purl(), err)
		}
	}
	return rec, nil
}

// QueueAnalyses inserts the jobs the queue does not know, up to MaxQueued
// unfinished ones (counted through the queue's partial index); Force
// queues known ones again.
func (s *Store) QueueAnalyses(ctx context.Context, q analysis.QueueRequest) (analysis.QueueResult, error) {
	var out analysis.QueueResult
	if len(q.Jobs) > analysis.MaxClaim {
		return out, core.Invalid("jobs", "at most %d in one call", analysis.MaxClaim)
	}
	for _, j := range q.Jobs {
		if j.Ecosystem == "" || j.Name == "" || j.Version == "" || len(j.Name) > maxAnalysisText || len(j.Version) > maxAnalysisText {
			return out, core.Invalid("jobs", "a job names an ecosystem, a name and a version (of at most %d bytes)", maxAnalysisText)
		}
	}
	if len(q.Jobs) == 0 {
		return out, nil
	}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		out = analysis.QueueResult{}
		unfinished, err := tx.NewSelect().Model((*analysisRow)(nil)).Where("state <> ?", analysis.StateDone).Count(ctx)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		for _, j := range q.Jobs {
			if q.MaxQueued > 0 && unfinished >= int64(q.MaxQueued) {
				known, err := tx.NewSelect().Model((*analysisRow)(nil)).
					Where("ecosystem = ? AND name = ? AND version = ?", j.Ecosystem, j.Name, j.Version).Exists(ctx)
				if err != nil {
					return err
				}
				if known && !q.Force {
					out.Known++
				} else {
					out.Full++
				}
				continue
			}
			at := j.QueuedAt
			if at.IsZero() {
				at = now
			}
			row := analysisRow{Ecosystem: j.Ecosystem, Name: j.Name, Version: j.Version, State: analysis.StateQueued,
				QueuedAt: at.UTC(), RequestedBy: j.RequestedBy}
			ins := tx.NewInsert().Model(&row)
			if q.Force {
				ins = ins.On("CONFLICT (ecosystem, name, version) DO UPDATE").
					Set("state = EXCLUDED.state, queued_at = EXCLUDED.queued_at, requested_by = EXCLUDED.requested_by, holder = NULL, lease_until = NULL")
			} else {
				ins = ins.On("CONFLICT (ecosystem, name, version) DO NOTHING")
			}
			res, err := ins.Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				out.Known++
				continue
			}
			out.Queued++
			unfinished++
		}
		return nil
	})
	return out, err
}

// ClaimAnalyses leases the oldest queued analyses (and running ones whose
// lease expired) to c.Holder in one statement: on PostgreSQL a row another
// daemon claimed meanwhile fails the statement's own condition when it is
// read again, so no version is claimed twice.
func (s *Store) ClaimAnalyses(ctx context.Context, c analysis.Claim) ([]analysis.Job, error) {
	if err := core.CheckLimit(c.Limit, analysis.MaxClaim); err != nil {
		return nil, err
	}
	if c.Holder == "" || c.TTL <= 0 {
		return nil, core.Invalid("claim", "names a holder and a lease")
	}
	now := c.Now.UTC()
	var rows []analysisRow
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		rows = nil
		// Its own alias: a column named without one would be the outer
		// statement's row, and every row would match.
		due := tx.NewSelect().TableExpr(tableUsing(s.dialect, "analyses AS due", "analyses_queue_idx")).
			ColumnExpr("due.ecosystem, due.name, due.version").
			Where("due.state <> ?", analysis.StateDone).Where("due.state = ? OR due.lease_until < ?", analysis.StateQueued, now).
			OrderExpr("due.queued_at").Limit(int64(c.Limit))
		return tx.NewUpdate().Model((*analysisRow)(nil)).
			Set("state = ?, holder = ?, lease_until = ?, attempts = attempts + 1", analysis.StateRunning, c.Holder, now.Add(c.TTL)).
			Where("(ecosystem, name, version) IN (?)", due).
			Where("state = ? OR (state = ? AND lease_until < ?)", analysis.StateQueued, analysis.StateRunning, now).
			Returning("ecosystem, name, version, queued_at, requested_by, attempts").Scan(ctx, &rows)
	})
	if err != nil {
		return nil, err
	}
	out := make([]analysis.Job, len(rows))
	for i, r := range rows {
		out[i] = analysis.Job{Ecosystem: r.Ecosystem, Name: r.Name, Version: r.Version, QueuedAt: r.QueuedAt.UTC(), RequestedBy: r.RequestedBy, Attempts: r.Attempts}
	}
	return out, nil
}

// FinishAnalysis stores the result when o.Holder still holds the lease.
func (s *Store) FinishAnalysis(ctx context.Context, o analysis.Outcome) (analysis.Entry, error) {
	body, err := json.Marshal(o.Result)
	if err != nil {
		return analysis.Entry{}, err
	}
	var rec analysis.Entry
	err = s.write(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.NewUpdate().Model((*analysisRow)(nil)).
			Set("state = ?, holder = NULL, lease_until = NULL, digest = ?, verdict = ?, result = ?, analyzed_at = ?",
				analysis.StateDone, o.Digest, o.Result.Verdict, string(body), o.At.UTC()).
			Where("ecosystem = ? AND name = ? AND version = ?", o.Key.Ecosystem, o.Key.Name, o.Key.Version).
			Where("state = ? AND holder = ?", analysis.StateRunning, o.Holder).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: the analysis of %s is no longer leased to %s", core.ErrConflict, o.Key.Purl(), o.Holder)
		}
		rec, err = s.analysisRecord(ctx, tx, o.Key)
		return err
	})
	return rec, err
}

// LinkAnalysisReport records the report of a suspicious analysis.
func (s *Store) LinkAnalysisReport(ctx context.Context, l analysis.ReportLink) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.NewUpdate().Model((*analysisRow)(nil)).Set("report_id = ?", l.ReportID).
			Where("ecosystem = ? AND name = ? AND version = ?", l.Key.Ecosystem, l.Key.Name, l.Key.Version).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: no analysis of %s", core.ErrNotFound, l.Key.Purl())
		}
		return nil
	})
}

// Analysis reads one record through the primary key.
func (s *Store) Analysis(ctx context.Context, k analysis.Key) (analysis.Entry, error) {
	return s.analysisRecord(ctx, s.db, k)
}

func (s *Store) analysisRecord(ctx context.Context, db bun.IDB, k analysis.Key) (analysis.Entry, error) {
	var rows []struct {
		analysisRow  `bun:",extend"`
		ReportStatus *string `bun:"report_status"`
	}
	if err := db.NewSelect().TableExpr("analyses AS a").ColumnExpr("a.*, t.status AS report_status").
		Join("LEFT JOIN threats AS t ON t.id = a.report_id").
		Where("a.ecosystem = ? AND a.name = ? AND a.version = ?", k.Ecosystem, k.Name, k.Version).Scan(ctx, &rows); err != nil {
		return analysis.Entry{}, err
	}
	if len(rows) == 0 {
		return analysis.Entry{}, fmt.Errorf("%w: %s was never analysed", core.ErrNotFound, k.Purl())
	}
	rec, err := rows[0].record()
	rec.ReportStatus = deref(rows[0].ReportStatus)
	return rec, err
}

// AnalysesOfReports reads the analyses behind reports through the
// report_id index.
func (s *Store) AnalysesOfReports(ctx context.Context, ids []string) ([]analysis.Entry, error) {
	if len(ids) > analysis.MaxClaim {
		return nil, core.Invalid("report_ids", "at most %d in one call", analysis.MaxClaim)
	}
	out := []analysis.Entry{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []analysisRow
	if err := s.db.NewSelect().Model(&rows).Where("report_id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, err
	}
	for _, r := range rows {
		rec, err := r.record()
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// AnalysisHolds reads the unfinished analyses (the queue's partial index)
// and the suspicious ones whose report is pending (the report index).
func (s *Store) AnalysisHolds(ctx context.Context, q analysis.HoldQuery) ([]analysis.Hold, error) {
	if err := core.CheckLimit(q.Limit, analysis.MaxHolds); err != nil {
		return nil, err
	}
	// The suspects first: a hold the firewall must not miss; then the
	// unfinished analyses, within what is left of the limit.
	var suspects []analysisRow
	if err := s.db.NewSelect().Model(&suspects).ModelTableExpr(tableUsing(s.dialect, "analyses AS analysis_row", "analyses_report_idx")).
		Where("report_id IS NOT NULL").Where("state = ?", analysis.StateDone).
		Where("EXISTS (SELECT 1 FROM threats AS t WHERE t.id = analysis_row.report_id AND t.status = ?)", core.StatusPending).
		Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]analysis.Hold, 0, len(suspects))
	for _, r := range suspects {
		rec, err := r.record()
		if err != nil {
			return nil, err
		}
		h := analysis.Hold{Key: rec.Job.Key(), Suspect: true, ReportID: rec.ReportID, Strongest: rec.Result.Strongest()}
		h.Findings = rec.Result.Findings[:min(len(rec.Result.Findings), analysis.MaxHoldFindings)]
		out = append(out, h)
	}
	if len(out) == q.Limit {
		return out, nil
	}
	var open []analysisRow
	if err := s.db.NewSelect().Model(&open).ModelTableExpr(tableUsing(s.dialect, "analyses AS analysis_row", "analyses_queue_idx")).
		Column("ecosystem", "name", "version").Where("state <> ?", analysis.StateDone).
		OrderExpr("queued_at").Limit(int64(q.Limit - len(out))).Scan(ctx); err != nil {
		return nil, err
	}
	for _, r := range open {
		out = append(out, analysis.Hold{Key: analysis.Key{Ecosystem: r.Ecosystem, Name: r.Name, Version: r.Version}, Unfinished: true})
	}
	return out, nil
}

// AnalysisQueue counts the unfinished analyses by state.
func (s *Store) AnalysisQueue(ctx context.Context) (analysis.QueueLength, error) {
	var q analysis.QueueLength
	for _, c := range []struct {
		state string
		n     *int64
	}{{analysis.StateQueued, &q.Queued}, {analysis.StateRunning, &q.Running}} {
		n, err := s.db.NewSelect().Model((*analysisRow)(nil)).ModelTableExpr(tableUsing(s.dialect, "analyses AS analysis_row", "analyses_queue_idx")).
			Where("state <> ?", analysis.StateDone).Where("state = ?", c.state).Count(ctx)
		if err != nil {
			return q, err
		}
		*c.n = int64(n)
	}
	return q, nil
}

var _ analysis.Store = (*Store)(nil)
