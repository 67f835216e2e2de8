package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/webhooks"
)

// CreateWebhook stores a subscription.
func (s *Store) CreateWebhook(ctx context.Context, w webhooks.Webhook) error {
	row := webhookToRow(w)
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*webhookRow)(nil)).Count(ctx)
		if err != nil {
			return err
		}
		if n >= webhooks.MaxWebhooks {
			return fmt.Errorf("%w: at most %d webhook subscriptions; remove one first", core.ErrLimit, webhooks.MaxWebhooks)
		}
		_, err = tx.NewInsert().Model(&row).Exec(ctx)
		return err
	})
}

// ListWebhooks returns the subscriptions with their delivery counts.
func (s *Store) ListWebhooks(ctx context.Context) ([]webhooks.Webhook, error) {
	var rows []webhookRow
	if err := s.db.NewSelect().Model(&rows).OrderExpr("created_at, id").Scan(ctx); err != nil {
		return nil, err
	}
	var counts []struct {
		WebhookID string `bun:"webhook_id"`
		State     string `bun:"state"`
		N         int64  `bun:"n"`
	}
	if err := s.db.NewSelect().Table("webhook_deliveries").Column("webhook_id", "state").ColumnExpr("count(*) AS n").
		Group("webhook_id", "state").Scan(ctx, &counts); err != nil {
		return nil, err
	}
	out := make([]webhooks.Webhook, len(rows))
	at := map[string]int{}
	for i, r := range rows {
		out[i] = r.domain()
		at[r.ID] = i
	}
	for _, c := range counts {
		i, ok := at[c.WebhookID]
		if !ok {
			continue
		}
		switch c.State {
		case webhooks.DeliveryPending:
			out[i].Pending = c.N
		case webhooks.DeliveryDelivered:
			out[i].Delivered = c.N
		case webhooks.DeliveryFailed:
			out[i].Failed = c.N
		case webhooks.DeliveryExpired:
			out[i].Expired += c.N
		}
	}
	return out, nil
}

// DeleteWebhook removes a subscription, its queue and its attempts.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Table("webhook_attempts").Where("webhook_id = ?", id).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Table("webhook_deliveries").Where("webhook_id = ?", id).Exec(ctx); err != nil {
			return err
		}
		res, err := tx.NewDelete().Table("webhooks").Where("id = ?", id).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: no webhook subscription %s", core.ErrNotFound, id)
		}
		return nil
	})
}

// EnableWebhook clears a subscription's disabled and failing marks.
func (s *Store) EnableWebhook(ctx context.Context, id string) (webhooks.Webhook, error) {
	var row webhookRow
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Table("webhooks").Set("disabled_at = NULL, disabled_reason = NULL, failing_since = NULL").Where("id = ?", id).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: no webhook subscription %s", core.ErrNotFound, id)
		}
		// Its pending events are due now, not at the times of the
		// attempts planned before it was disabled.
		if _, err := tx.NewUpdate().Table("webhook_deliveries").Set("next_at = ?", s.now().UTC()).
			Where("webhook_id = ? AND state = ?", id, webhooks.DeliveryPending).Exec(ctx); err != nil {
			return err
		}
		return tx.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	})
	return row.domain(), err
}

// DueDeliveries reads the due pending deliveries of enabled subscriptions
// through the partial index on next_at.
func (s *Store) DueDeliveries(ctx context.Context, q webhooks.DueQuery) ([]webhooks.Delivery, error) {
	now, limit := q.Now, q.Limit
	if err := core.CheckLimit(limit, core.MaxPage); err != nil {
		return nil, err
	}
	// An ordered read of the due index: the deliveries of a disabled
	// subscription are parked at parkedAt, past any now, so the read stops
	// after limit rows however many of them wait.
	if len(q.Except) > core.MaxPage {
		return nil, core.Invalid("except", "names more than %d subscriptions", core.MaxPage)
	}
	var rows []deliveryRow
	sel := s.db.NewSelect().Model(&rows).ModelTableExpr(tableUsing(s.dialect, "webhook_deliveries AS delivery_row", "webhook_deliveries_due_idx")).
		Where("state = ? AND next_at <= ?", webhooks.DeliveryPending, now.UTC()).
		Where("webhook_id IN (SELECT id FROM webhooks WHERE disabled_at IS NULL)")
	if len(q.Except) > 0 {
		sel = sel.Where("webhook_id NOT IN (?)", bun.List(q.Except))
	}
	if err := sel.OrderExpr("next_at").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	var hooks []webhookRow
	if err := s.db.NewSelect().Model(&hooks).Where("disabled_at IS NULL").Scan(ctx); err != nil {
		return nil, err
	}
	byID := map[string]webhooks.Webhook{}
	for _, h := range hooks {
		byID[h.ID] = h.domain()
	}
	seqs := make([]int64, len(rows))
	for i, r := range rows {
		seqs[i] = r.Seq
	}
	var payloads []payloadRow
	if err := s.db.NewSelect().Model(&payloads).Where("seq IN (?)", bun.List(seqs)).Scan(ctx); err != nil {
		return nil, err
	}
	bySeq := map[int64][]byte{}
	for _, p := range payloads {
		bySeq[p.Seq] = []byte(p.Payload)
	}
	out := make([]webhooks.Delivery, 0, len(rows))
	for _, r := range rows {
		d := r.domain()
		d.Webhook, d.Payload = byID[r.WebhookID], bySeq[r.Seq]
		out = append(out, d)
	}
	return out, nil
}

// RecordAttempt applies one attempt's outcome in one transaction.
func (s *Store) RecordAttempt(ctx context.Context, o webhooks.AttemptOutcome) error {
	a := o.Attempt
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		upd := tx.NewUpdate().Table("webhook_deliveries").Set("attempts = attempts + 1").Set("state = ?", a.State).
			Where("webhook_id = ? AND seq = ? AND state = ?", a.WebhookID, a.Seq, webhooks.DeliveryPending)
		if a.State == webhooks.DeliveryPending {
			upd = upd.Set("next_at = ?", o.NextAt.UTC())
		} else {
			upd = upd.Set("finished_at = ?", a.At.UTC())
		}
		res, err := upd.Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Finished meanwhile (another daemon that held the lease
			// before), or its subscription was removed: nothing to record.
			return nil
		}
		if o.Payload != nil {
			// The first attempt of any subscription fixes the body of the
			// change for all of them.
			p := payloadRow{Seq: a.Seq, Payload: string(o.Payload)}
			if _, err := tx.NewInsert().Model(&p).On("CONFLICT (seq) DO NOTHING").Exec(ctx); err != nil {
				return err
			}
		}
		row := attemptRow{WebhookID: a.WebhookID, Seq: a.Seq, At: a.At.UTC(), Status: a.Status, LatencyUS: a.Latency.Microseconds(), Error: optString(a.Error), State: a.State}
		if _, err := tx.NewInsert().Model(&row).Returning("NULL").Exec(ctx); err != nil {
			return err
		}
		hook := tx.NewUpdate().Table("webhooks").Where("id = ?", a.WebhookID)
		switch {
		case a.State == webhooks.DeliveryDelivered:
			hook = hook.Set("failing_since = NULL, last_success_at = ?", a.At.UTC())
		case o.Disable != "":
			hook = hook.Set("disabled_at = ?, disabled_reason = ?", a.At.UTC(), o.Disable).Set("failing_since = coalesce(failing_since, ?)", a.At.UTC())
			if _, err := tx.NewUpdate().Table("webhook_deliveries").Set("next_at = ?", parkedAt).
				Where("webhook_id = ? AND state = ?", a.WebhookID, webhooks.DeliveryPending).Exec(ctx); err != nil {
				return err
			}
		default:
			hook = hook.Set("failing_since = coalesce(failing_since, ?)", a.At.UTC())
		}
		_, err = hook.Exec(ctx)
		return err
	})
}

// WebhookAttempts lists a subscription's attempts, newest first.
func (s *Store) WebhookAttempts(ctx context.Context, q webhooks.AttemptQuery) ([]webhooks.DeliveryAttempt, error) {
	webhookID, limit := q.WebhookID, q.Limit
	if err := core.CheckLimit(limit, core.MaxPage); err != nil {
		return nil, err
	}
	n, err := s.db.NewSelect().Table("webhooks").Where("id = ?", webhookID).Count(ctx)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no webhook subscription %s", core.ErrNotFound, webhookID)
	}
	var rows []struct {
		attemptRow `bun:",extend"`
		ThreatID   string `bun:"threat_id"`
		Kind       string `bun:"kind"`
	}
	if err := s.db.NewSelect().TableExpr("webhook_attempts AS a").
		ColumnExpr("a.id, a.webhook_id, a.seq, a.at, a.status, a.latency_us, a.error, a.state, d.threat_id, d.kind").
		Join("JOIN webhook_deliveries AS d ON d.webhook_id = a.webhook_id AND d.seq = a.seq").
		Where("a.webhook_id = ?", webhookID).OrderExpr("a.id DESC").Limit(int64(limit)).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	out := make([]webhooks.DeliveryAttempt, len(rows))
	for i, r := range rows {
		out[i] = webhooks.DeliveryAttempt{WebhookID: r.WebhookID, Seq: r.Seq, ThreatID: r.ThreatID, Kind: r.Kind, At: r.At.UTC(),
			Status: r.Status, Latency: time.Duration(r.LatencyUS) * time.Microsecond, Error: deref(r.Error), State: r.attemptRow.State}
	}
	return out, nil
}

// WebhookQueue counts the pending deliveries (the partial index holds only
// them).
func (s *Store) WebhookQueue(ctx context.Context) (webhooks.WebhookQueue, error) {
	var q webhooks.WebhookQueue
	n, err := s.db.NewSelect().Table("webhook_deliveries").Where("state = ?", webhooks.DeliveryPending).Count(ctx)
	if err != nil {
		return q, err
	}
	q.Pending = int64(n)
	var oldest []time.Time
	if err := s.db.NewSelect().Table("webhook_deliveries").Column("event_at").Where("state = ?", webhooks.DeliveryPending).
		OrderExpr("event_at").Limit(1).Scan(ctx, &oldest); err != nil {
		return q, err
	}
	if len(oldest) == 1 {
		q.Oldest = oldest[0].UTC()
	}
	return q, nil
}

// TrimWebhooks expires the oldest pending events of disabled subscriptions
// beyond maxPending each, and deletes finished deliveries older than
// finishedBefore.
func (s *Store) TrimWebhooks(ctx context.Context, t webhooks.WebhookTrim) (int64, error) {
	maxPending, finishedBefore := t.MaxPending, t.FinishedBefore
	var expired int64
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var disabled []string
		if err := tx.NewSelect().Table("webhooks").Column("id").Where("disabled_at IS NOT NULL").Scan(ctx, &disabled); err != nil {
			return err
		}
		now := s.now().UTC()
		for _, id := range disabled {
			// The seq of the newest event beyond the bound: it and every
			// older pending one expire.
			var cut []int64
			if err := tx.NewSelect().Table("webhook_deliveries").Column("seq").
				Where("webhook_id = ? AND state = ?", id, webhooks.DeliveryPending).
				OrderExpr("seq DESC").Offset(int64(maxPending)).Limit(1).Scan(ctx, &cut); err != nil {
				return err
			}
			if len(cut) == 0 {
				continue
			}
			res, err := tx.NewUpdate().Table("webhook_deliveries").Set("state = ?, finished_at = ?", webhooks.DeliveryExpired, now).
				Where("webhook_id = ? AND state = ? AND seq <= ?", id, webhooks.DeliveryPending, cut[0]).Exec(ctx)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			expired += n
		}
		// A body no pending delivery needs goes.
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_payloads WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries AS d
  WHERE d.seq = webhook_payloads.seq AND d.state = 'pending')`); err != nil {
			return err
		}
		if finishedBefore.IsZero() {
			return nil
		}
		// Counted on the subscription before the rows go.
		if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET expired = expired + (SELECT count(*) FROM webhook_deliveries AS d
  WHERE d.webhook_id = webhooks.id AND d.state = 'expired' AND d.finished_at < ?)`, finishedBefore.UTC()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_attempts WHERE (webhook_id, seq) IN (SELECT webhook_id, seq FROM webhook_deliveries
  WHERE state <> 'pending' AND finished_at < ?)`, finishedBefore.UTC()); err != nil {
			return err
		}
		_, err := tx.NewDelete().Table("webhook_deliveries").Where("state <> ? AND finished_at < ?", webhooks.DeliveryPending, finishedBefore.UTC()).Exec(ctx)
		return err
	})
	return expired, err
}

// parkedAt is the next attempt time of the deliveries of a disabled
// subscription: never due, so the due index's ordered read passes none of
// them. EnableWebhook makes them due again.
var parkedAt = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// queueWebhookEvents queues the changes a transaction published (their
// times are from first on) for every subscription that wants them, in that
// transaction: the outbox of the webhooks.
func queueWebhookEvents(ctx context.Context, tx bun.Tx, first time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (webhook_id, seq, threat_id, kind, version, event_at, state, attempts, next_at)
SELECT w.id, f.seq, f.threat_id, f.kind, f.version, f.at, 'pending', 0, CASE WHEN w.disabled_at IS NULL THEN f.at ELSE ? END
FROM webhooks AS w JOIN feed_events AS f ON f.at >= ?
WHERE (w.ecosystem IS NULL OR w.ecosystem = f.registry)
  AND ((f.kind = 'verified' AND w.on_verified) OR (f.kind = 'revised' AND w.on_revised) OR (f.kind = 'withdrawn' AND w.on_withdrawn)
    OR (f.kind = 'disputed' AND w.on_disputed) OR (f.kind = 'kept' AND w.on_kept))`, parkedAt, first)
	if err != nil {
		return fmt.Errorf("queue webhook events: %w", err)
	}
	return nil
}

var _ webhooks.WebhookStore = (*Store)(nil)
