package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

// QueryThreats returns one keyset page of verified reports.
func (s *Store) QueryThreats(ctx context.Context, q core.ThreatQuery) ([]core.Threat, error) {
	limit := q.Limit
	if limit <= 0 || limit > 10000 {
		limit = 100
	}
	var rows []threatRow
	sel := s.db.NewSelect().Model(&rows).Relation("Details").Where("threat_row.status = ?", string(core.StatusVerified))
	if !q.VerifiedFrom.IsZero() {
		sel = sel.Where("threat_row.verified_at >= ?", q.VerifiedFrom)
	}
	if !q.VerifiedTo.IsZero() {
		sel = sel.Where("threat_row.verified_at < ?", q.VerifiedTo)
	}
	if q.Registry != "" {
		sel = sel.Where("threat_row.registry = ?", q.Registry)
	}
	if q.Publisher != "" {
		sel = sel.Where("lower(details.publisher) = lower(?)", q.Publisher)
	}
	dir := "ASC"
	if q.Descending {
		dir = "DESC"
	}
	if q.AfterID != "" {
		op := ">"
		if q.Descending {
			op = "<"
		}
		sel = sel.Where("(threat_row.verified_at "+op+" ? OR (threat_row.verified_at = ? AND threat_row.id "+op+" ?))",
			q.AfterVerifiedAt, q.AfterVerifiedAt, q.AfterID)
	}
	if err := sel.OrderExpr("threat_row.verified_at " + dir + ", threat_row.id " + dir).Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]core.Threat, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// ListRevisions returns a report's revisions, oldest first.
func (s *Store) ListRevisions(ctx context.Context, threatID string) ([]core.Revision, error) {
	var rows []revisionRow
	if err := s.db.NewSelect().Model(&rows).Where("threat_id = ?", threatID).Order("number ASC").Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]core.Revision, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

type secretRow struct {
	bun.BaseModel `bun:"table:secrets"`

	Name  string    `bun:"name,pk"`
	Value string    `bun:"value,notnull"`
	At    time.Time `bun:"created_at,notnull"`
}

// Secret returns the named secret, creating it on first use. Concurrent
// first uses agree: the insert ignores a conflict and everyone reads back.
func (s *Store) Secret(ctx context.Context, name string) (string, error) {
	var value string
	err := s.db.NewSelect().Table("secrets").Column("value").Where("name = ?", name).Scan(ctx, &value)
	if err == nil {
		return value, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	row := secretRow{Name: name, Value: hex.EncodeToString(b), At: s.now()}
	if _, err := s.db.NewInsert().Model(&row).On("CONFLICT (name) DO NOTHING").Exec(ctx); err != nil {
		return "", err
	}
	err = s.db.NewSelect().Table("secrets").Column("value").Where("name = ?", name).Scan(ctx, &value)
	return value, err
}

type usageRow struct {
	bun.BaseModel `bun:"table:paid_usage"`

	Day      string `bun:"day,pk"`
	TokenID  string `bun:"token_id,pk"`
	Endpoint string `bun:"endpoint,pk"`
	Calls    int64  `bun:"calls,notnull"`
}

// AddUsage adds paid-call counts.
func (s *Store) AddUsage(ctx context.Context, deltas []core.UsageDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	rows := make([]usageRow, len(deltas))
	for i, d := range deltas {
		rows[i] = usageRow{Day: d.Day, TokenID: d.TokenID, Endpoint: d.Endpoint, Calls: d.Calls}
	}
	_, err := s.db.NewInsert().Model(&rows).On("CONFLICT (day, token_id, endpoint) DO UPDATE").
		Set("calls = ?TableAlias.calls + EXCLUDED.calls").Exec(ctx)
	return err
}

// Usage returns a token's paid calls of a day by endpoint.
func (s *Store) Usage(ctx context.Context, tokenID, day string) (map[string]int64, error) {
	var rows []usageRow
	if err := s.db.NewSelect().Model(&rows).Where("token_id = ?", tokenID).Where("day = ?", day).Scan(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.Endpoint] = r.Calls
	}
	return out, nil
}

// Feed returns one page of published changes in (at, seq) order, each with
// its report as it is now. The page is read from feed_events' (at, seq) or
// (registry, at, seq) index from the keyset position on; the reports are
// then read by primary key.
func (s *Store) Feed(ctx context.Context, q core.FeedQuery) ([]core.FeedItem, error) {
	limit := q.Limit
	if limit <= 0 || limit > core.MaxGetThreats {
		limit = 100
	}
	var rows []feedEventRow
	sel := s.db.NewSelect().Model(&rows)
	if q.Registry != "" {
		sel = sel.Where("feed_event_row.registry = ?", q.Registry)
	}
	if !q.From.IsZero() {
		sel = sel.Where("feed_event_row.at >= ?", q.From.UTC())
	}
	if !q.To.IsZero() {
		sel = sel.Where("feed_event_row.at < ?", q.To.UTC())
	}
	if q.AfterSeq > 0 {
		sel = sel.Where("(feed_event_row.at, feed_event_row.seq) > (?, ?)", q.AfterAt.UTC(), q.AfterSeq)
	}
	if q.Kind != "" {
		sel = sel.Where("feed_event_row.kind = ?", q.Kind)
	}
	if q.Published {
		sel = sel.Where("feed_event_row.kind = ?", core.ChangeVerified).
			Where("EXISTS (SELECT 1 FROM threats AS t WHERE t.id = feed_event_row.threat_id AND t.status = ?)", string(core.StatusVerified))
	}
	if err := sel.OrderExpr("feed_event_row.at ASC, feed_event_row.seq ASC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(rows))
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.ThreatID] {
			seen[r.ThreatID] = true
			ids = append(ids, r.ThreatID)
		}
	}
	threats, err := s.GetThreats(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]core.Threat, len(threats))
	for _, t := range threats {
		byID[t.ID] = t
	}
	out := make([]core.FeedItem, 0, len(rows))
	for _, r := range rows {
		if t, ok := byID[r.ThreatID]; ok {
			out = append(out, core.FeedItem{Event: r.domain(), Threat: t})
		}
	}
	return out, nil
}

// LastFeedEvent returns the last published change before to.
func (s *Store) LastFeedEvent(ctx context.Context, to time.Time) (core.FeedEvent, error) {
	var rows []feedEventRow
	sel := s.db.NewSelect().Model(&rows)
	if !to.IsZero() {
		sel = sel.Where("feed_event_row.at < ?", to.UTC())
	}
	if err := sel.OrderExpr("feed_event_row.at DESC, feed_event_row.seq DESC").Limit(1).Scan(ctx); err != nil {
		return core.FeedEvent{}, err
	}
	if len(rows) == 0 {
		return core.FeedEvent{}, nil
	}
	return rows[0].domain(), nil
}
