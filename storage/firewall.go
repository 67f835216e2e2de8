package storage

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

type waiverRow struct {
	bun.BaseModel `bun:"table:firewall_waivers"`

	ID        string    `bun:"id,pk"`
	Ecosystem string    `bun:"ecosystem,notnull"`
	Name      string    `bun:"name,notnull"`
	Version   string    `bun:"version,notnull"`
	Rule      string    `bun:"rule,notnull"`
	Reason    string    `bun:"reason,notnull"`
	CreatedBy string    `bun:"created_by,notnull"`
	CreatedAt time.Time `bun:"created_at,notnull"`
	Until     time.Time `bun:"until,notnull"`
}

type decisionRow struct {
	bun.BaseModel `bun:"table:firewall_decisions"`

	Seq       int64      `bun:"seq,pk,autoincrement"`
	At        time.Time  `bun:"at,notnull"`
	Ecosystem string     `bun:"ecosystem,notnull"`
	Name      string     `bun:"name,notnull"`
	Version   string     `bun:"version,notnull"`
	Purl      string     `bun:"purl,notnull"`
	Rule      string     `bun:"rule,notnull"`
	Action    string     `bun:"action,notnull"`
	ThreatIDs string     `bun:"threat_ids,notnull"`
	Until     *time.Time `bun:"until"`
	UserEmail string     `bun:"user_email,notnull"`
	ClientIP  string     `bun:"client_ip,notnull"`
}

type heldRow struct {
	bun.BaseModel `bun:"table:firewall_held"`

	Ecosystem string     `bun:"ecosystem,pk"`
	Name      string     `bun:"name,pk"`
	Version   string     `bun:"version,pk"`
	Published *time.Time `bun:"published"`
	FirstSeen time.Time  `bun:"first_seen,notnull"`
	Until     time.Time  `bun:"until,notnull"`
}

func (r waiverRow) domain() firewall.Waiver {
	return firewall.Waiver{ID: r.ID, Ecosystem: r.Ecosystem, Name: r.Name, Version: r.Version, Rule: r.Rule, Reason: r.Reason,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), Until: r.Until.UTC()}
}

func (r decisionRow) domain() firewall.FirewallDecision {
	d := firewall.FirewallDecision{Seq: r.Seq, Time: r.At.UTC(), Ecosystem: r.Ecosystem, Name: r.Name, Version: r.Version, Purl: r.Purl,
		Rule: r.Rule, Action: r.Action, Until: timeOf(r.Until), User: r.UserEmail, ClientIP: r.ClientIP}
	if r.ThreatIDs != "" {
		d.ThreatIDs = strings.Split(r.ThreatIDs, ",")
	}
	return d
}

func (r heldRow) domain() firewall.HeldVersion {
	return firewall.HeldVersion{Ecosystem: r.Ecosystem, Name: r.Name, Version: r.Version, Published: timeOf(r.Published),
		FirstSeen: r.FirstSeen.UTC(), Until: r.Until.UTC()}
}

// CreateWaiver stores a waiver, at most firewall.MaxWaivers in force.
func (s *Store) CreateWaiver(ctx context.Context, w firewall.Waiver) error {
	row := waiverRow{ID: w.ID, Ecosystem: w.Ecosystem, Name: w.Name, Version: w.Version, Rule: w.Rule, Reason: w.Reason,
		CreatedBy: w.CreatedBy, CreatedAt: w.CreatedAt.UTC(), Until: w.Until.UTC()}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*waiverRow)(nil)).Where("until > ?", s.now().UTC()).Count(ctx)
		if err != nil {
			return err
		}
		if n >= firewall.MaxWaivers {
			return fmt.Errorf("%w: at most %d waivers in force; remove one first", core.ErrLimit, firewall.MaxWaivers)
		}
		_, err = tx.NewInsert().Model(&row).Exec(ctx)
		return err
	})
}

// ListWaivers returns the waivers ending after now, refusing more than
// firewall.MaxWaivers (concurrent makers can pass CreateWaiver's count).
func (s *Store) ListWaivers(ctx context.Context, now time.Time) ([]firewall.Waiver, error) {
	var rows []waiverRow
	err := s.db.NewSelect().Model(&rows).Where("until > ?", now.UTC()).OrderExpr("created_at DESC, id").Limit(firewall.MaxWaivers + 1).Scan(ctx)
	if err != nil {
		return nil, err
	}
	if len(rows) > firewall.MaxWaivers {
		return nil, fmt.Errorf("%w: more than %d waivers in force; remove some", core.ErrLimit, firewall.MaxWaivers)
	}
	out := make([]firewall.Waiver, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// DeleteWaiver removes a waiver.
func (s *Store) DeleteWaiver(ctx context.Context, id string) error {
	res, err := s.db.NewDelete().Model((*waiverRow)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: no waiver %s", core.ErrNotFound, id)
	}
	return nil
}

// RecordDecisions stores decisions and queues their events in one
// transaction: the webhooks' outbox. The delivery of a decision's event
// has the seq -decision.seq (feed events' are positive) and its body
// stored at once, so that every attempt sends the bytes made here.
func (s *Store) RecordDecisions(ctx context.Context, ds []firewall.FirewallDecision) error {
	if len(ds) == 0 {
		return nil
	}
	rows := make([]decisionRow, len(ds))
	for i, d := range ds {
		rows[i] = decisionRow{At: d.Time.UTC(), Ecosystem: d.Ecosystem, Name: d.Name, Version: d.Version, Purl: d.Purl, Rule: d.Rule,
			Action: d.Action, ThreatIDs: strings.Join(d.ThreatIDs, ","), Until: optTime(d.Until), UserEmail: d.User, ClientIP: d.ClientIP}
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var subscribed int
		if err := tx.NewSelect().Table("webhooks").ColumnExpr("count(*)").
			Where("on_firewall_blocked OR on_firewall_warned").Scan(ctx, &subscribed); err != nil {
			return err
		}
		for from := 0; from < len(rows); from += 500 {
			batch := rows[from:min(from+500, len(rows))]
			if subscribed == 0 {
				if _, err := tx.NewInsert().Model(&batch).Returning("NULL").Exec(ctx); err != nil {
					return err
				}
				continue
			}
			// The seqs are read back to number the events.
			if _, err := tx.NewInsert().Model(&batch).Returning("seq").Exec(ctx); err != nil {
				return err
			}
		}
		if subscribed == 0 {
			return nil
		}
		for i, d := range ds {
			if d.Event == nil {
				continue
			}
			column := "on_firewall_blocked"
			if d.EventType == firewall.EventFirewallWarned {
				column = "on_firewall_warned"
			}
			if err := queueEvent(ctx, tx, pushedEvent{seq: -rows[i].Seq, kind: d.EventType, column: column, at: d.Time,
				ecosystem: firewall.RegistryOfFirewall(d.Ecosystem), body: d.Event}); err != nil {
				return fmt.Errorf("queue firewall events: %w", err)
			}
		}
		return nil
	})
}

// ListDecisions reads a page of decisions through the index on (at, seq).
func (s *Store) ListDecisions(ctx context.Context, q firewall.FirewallDecisionQuery) (firewall.FirewallDecisionList, error) {
	if err := core.CheckLimit(q.Limit, core.MaxPage); err != nil {
		return firewall.FirewallDecisionList{}, err
	}
	var rows []decisionRow
	sel := s.db.NewSelect().Model(&rows)
	if q.After > 0 {
		// The cursor is the last seq read: its time, then seq, orders
		// the rest (a decision recorded later with an earlier time by
		// another daemon is still listed, after its time).
		var at time.Time
		err := s.db.NewSelect().Table("firewall_decisions").Column("at").Where("seq = ?", q.After).Scan(ctx, &at)
		if err != nil {
			return firewall.FirewallDecisionList{}, core.Invalid("cursor", "names no decision kept (they are kept for firewall.decisions_keep)")
		}
		sel = sel.Where("(at, seq) > (?, ?)", at.UTC(), q.After)
	}
	if !q.Since.IsZero() {
		sel = sel.Where("at >= ?", q.Since.UTC())
	}
	if err := sel.OrderExpr("at, seq").Limit(int64(q.Limit + 1)).Scan(ctx); err != nil {
		return firewall.FirewallDecisionList{}, err
	}
	out := firewall.FirewallDecisionList{More: len(rows) > q.Limit}
	rows = rows[:min(len(rows), q.Limit)]
	out.Decisions = make([]firewall.FirewallDecision, len(rows))
	for i, r := range rows {
		out.Decisions[i] = r.domain()
	}
	return out, nil
}

// TrimDecisions removes decisions made before before, and holds that
// ended before it.
func (s *Store) TrimDecisions(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*decisionRow)(nil)).Where("at < ?", before.UTC()).Exec(ctx)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		if _, err := tx.NewDelete().Model((*heldRow)(nil)).Where("until < ?", before.UTC()).Exec(ctx); err != nil {
			return err
		}
		_, err = tx.NewDelete().Model((*waiverRow)(nil)).Where("until < ?", before.UTC()).Exec(ctx)
		return err
	})
	return n, err
}

// RecordHeld upserts held versions, keeping each one's first_seen.
func (s *Store) RecordHeld(ctx context.Context, hs []firewall.HeldVersion) error {
	if len(hs) == 0 {
		return nil
	}
	rows := make([]heldRow, len(hs))
	for i, h := range hs {
		rows[i] = heldRow{Ecosystem: h.Ecosystem, Name: h.Name, Version: h.Version, Published: optTime(h.Published),
			FirstSeen: h.FirstSeen.UTC(), Until: h.Until.UTC()}
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for from := 0; from < len(rows); from += 500 {
			batch := rows[from:min(from+500, len(rows))]
			if _, err := tx.NewInsert().Model(&batch).
				On("CONFLICT (ecosystem, name, version) DO UPDATE").
				Set("published = EXCLUDED.published, until = EXCLUDED.until").Returning("NULL").Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListHeld reads a page of the versions held at q.Now, by the end of
// their hold, through the index on until.
func (s *Store) ListHeld(ctx context.Context, q firewall.HeldQuery) ([]firewall.HeldVersion, error) {
	if err := core.CheckLimit(q.Limit, core.MaxPage); err != nil {
		return nil, err
	}
	var rows []heldRow
	sel := s.db.NewSelect().Model(&rows).Where("until > ?", q.Now.UTC())
	if q.After != "" {
		parts := strings.Split(q.After, "\x00")
		if len(parts) != 4 {
			return nil, core.Invalid("cursor", "is not a cursor of this list")
		}
		until, err := time.Parse(time.RFC3339Nano, parts[0])
		if err != nil {
			return nil, core.Invalid("cursor", "is not a cursor of this list")
		}
		sel = sel.Where("(until, ecosystem, name, version) > (?, ?, ?, ?)", until.UTC(), parts[1], parts[2], parts[3])
	}
	if err := sel.OrderExpr("until, ecosystem, name, version").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]firewall.HeldVersion, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

var _ firewall.FirewallStore = (*Store)(nil)

// pushedEvent is an event whose body is made before it is queued (a
// firewall decision's, a report's exposure.found): its delivery seq, type,
// the subscriptions' column that names it, its report (if any) and the
// ecosystem subscriptions filter by.
type pushedEvent struct {
	seq                               int64
	kind, column, threatID, ecosystem string
	at                                time.Time
	body                              []byte
}

// queueEvent queues ev for every subscription whose column names it (and
// its ecosystem, when the subscription has one): due now for an enabled
// one, parked for a disabled one; its body is stored once when any takes it.
func queueEvent(ctx context.Context, tx bun.Tx, ev pushedEvent) error {
	var queued int64
	for _, q := range []struct {
		where string
		next  time.Time
	}{{"IS NULL", ev.at.UTC()}, {"IS NOT NULL", parkedAt}} {
		res, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (webhook_id, seq, threat_id, kind, version, event_at, state, attempts, next_at)
SELECT w.id, ?, ?, ?, 0, ?, 'pending', 0, ? FROM webhooks AS w
WHERE w.`+ev.column+` AND w.disabled_at `+q.where+` AND (w.ecosystem IS NULL OR w.ecosystem = ?)`,
			ev.seq, ev.threatID, ev.kind, ev.at.UTC(), q.next, ev.ecosystem)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		queued += n
	}
	if queued == 0 {
		return nil
	}
	p := payloadRow{Seq: ev.seq, Payload: string(ev.body)}
	_, err := tx.NewInsert().Model(&p).On("CONFLICT (seq) DO NOTHING").Exec(ctx)
	return err
}
