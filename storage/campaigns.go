package storage

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

type campaignRow struct {
	bun.BaseModel `bun:"table:campaigns,alias:cp"`

	ID          string    `bun:"id,pk"`
	Name        string    `bun:"name,notnull"`
	Description string    `bun:"description,notnull"`
	Tags        []string  `bun:"tags,notnull,type:jsonb"`
	CreatedAt   time.Time `bun:"created_at,notnull"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
	CreatedBy   string    `bun:"created_by,notnull"`
}

type campaignThreatRow struct {
	bun.BaseModel `bun:"table:campaign_threats,alias:ct"`

	CampaignID string    `bun:"campaign_id,pk"`
	ThreatID   string    `bun:"threat_id,pk"`
	AddedAt    time.Time `bun:"added_at,notnull"`
}

func (r campaignRow) domain() community.Campaign {
	tags := r.Tags
	if tags == nil {
		tags = []string{}
	}
	return community.Campaign{ID: r.ID, Name: r.Name, Description: r.Description, Tags: tags, ThreatIDs: []string{},
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), CreatedBy: r.CreatedBy}
}

// addMembers adds verified reports to campaign id (within tx): the first
// that is not verified is not found; one already in it stays.
func addMembers(ctx context.Context, tx bun.IDB, id string, threatIDs []string, at time.Time) error {
	if len(threatIDs) == 0 {
		return nil
	}
	// By their keys, the status read (with "AND status = ?" SQLite reads
	// every verified report through their status index).
	var rows0 []struct {
		ID     string `bun:"id"`
		Status string `bun:"status"`
	}
	if err := tx.NewSelect().Table("threats").Column("id", "status").Where("id IN (?)", bun.List(threatIDs)).
		Scan(ctx, &rows0); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	found := map[string]bool{}
	for _, r := range rows0 {
		found[r.ID] = r.Status == string(core.StatusVerified)
	}
	for _, tid := range threatIDs {
		if !found[tid] {
			return core.NotFound("verified report", tid)
		}
	}
	rows := make([]campaignThreatRow, len(threatIDs))
	for i, tid := range threatIDs {
		rows[i] = campaignThreatRow{CampaignID: id, ThreatID: tid, AddedAt: at.UTC()}
	}
	_, err := tx.NewInsert().Model(&rows).On("CONFLICT (campaign_id, threat_id) DO NOTHING").Exec(ctx)
	return err
}

// CreateCampaign stores a new campaign and its reports.
func (s *Store) CreateCampaign(ctx context.Context, c community.Campaign) error {
	if len(c.ThreatIDs) > community.MaxCampaignChange {
		return core.Invalid("threat_ids", "at most %d reports at once", community.MaxCampaignChange)
	}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		row := campaignRow{ID: c.ID, Name: c.Name, Description: c.Description, Tags: c.Tags, CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC(), CreatedBy: c.CreatedBy}
		if row.Tags == nil {
			row.Tags = []string{}
		}
		if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
			return err
		}
		return addMembers(ctx, tx, c.ID, c.ThreatIDs, c.CreatedAt)
	})
}

// UpdateCampaign applies a change to a campaign.
func (s *Store) UpdateCampaign(ctx context.Context, ch community.CampaignChange) (community.Campaign, error) {
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		var row campaignRow
		if err := lockRow(s.dialect, tx.NewSelect().Model(&row).Where("id = ?", ch.ID), "cp").Scan(ctx); errors.Is(err, sql.ErrNoRows) {
			return core.NotFound("campaign", ch.ID)
		} else if err != nil {
			return err
		}
		cols := []string{"updated_at"}
		row.UpdatedAt = ch.At
		if ch.Name != nil {
			row.Name, cols = *ch.Name, append(cols, "name")
		}
		if ch.Description != nil {
			row.Description, cols = *ch.Description, append(cols, "description")
		}
		if ch.SetTags {
			row.Tags, cols = ch.Tags, append(cols, "tags")
			if row.Tags == nil {
				row.Tags = []string{}
			}
		}
		if _, err := tx.NewUpdate().Model(&row).Column(cols...).WherePK().Exec(ctx); err != nil {
			return err
		}
		if len(ch.Remove) > 0 {
			if _, err := tx.NewDelete().Model((*campaignThreatRow)(nil)).Where("campaign_id = ? AND threat_id IN (?)", ch.ID, bun.List(ch.Remove)).Exec(ctx); err != nil {
				return err
			}
		}
		if err := addMembers(ctx, tx, ch.ID, ch.Add, ch.At); err != nil {
			return err
		}
		n, err := tx.NewSelect().Model((*campaignThreatRow)(nil)).Where("campaign_id = ?", ch.ID).Count(ctx)
		if err != nil {
			return err
		}
		if n > community.MaxCampaignReports {
			return core.Invalid("add_threat_ids", "a campaign holds at most %d reports", community.MaxCampaignReports)
		}
		return nil
	})
	if err != nil {
		return community.Campaign{}, err
	}
	return s.GetCampaign(ctx, ch.ID)
}

// GetCampaign reads a campaign with its verified reports.
func (s *Store) GetCampaign(ctx context.Context, id string) (community.Campaign, error) {
	var row campaignRow
	if err := s.db.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return community.Campaign{}, core.NotFound("campaign", id)
	} else if err != nil {
		return community.Campaign{}, err
	}
	out := []community.Campaign{row.domain()}
	if err := s.members(ctx, out); err != nil {
		return community.Campaign{}, err
	}
	return out[0], nil
}

// members fills in the campaigns' verified reports (in verification
// order) and their first and last seen.
func (s *Store) members(ctx context.Context, cs []community.Campaign) error {
	if len(cs) == 0 {
		return nil
	}
	ids := make([]string, len(cs))
	at := map[string]int{}
	for i, c := range cs {
		ids[i], at[c.ID] = c.ID, i
	}
	var rows []struct {
		CampaignID string     `bun:"campaign_id"`
		ThreatID   string     `bun:"threat_id"`
		VerifiedAt *time.Time `bun:"verified_at"`
		FirstSeen  *time.Time `bun:"first_seen"`
		LastSeen   *time.Time `bun:"last_seen"`
	}
	// CROSS JOIN: SQLite starts from the members (with a plain join it may
	// start from threats' status index, every verified report);
	// PostgreSQL plans it as the join it is.
	if err := s.db.NewSelect().TableExpr("campaign_threats AS ct").
		Join("CROSS JOIN threats AS t").Join("JOIN threat_details AS d ON d.threat_id = ct.threat_id").
		ColumnExpr("ct.campaign_id, ct.threat_id, t.verified_at, d.first_seen, d.last_seen").
		Where("t.id = ct.threat_id AND ct.campaign_id IN (?) AND t.status = ?", bun.List(ids), core.StatusVerified).
		OrderExpr("ct.campaign_id, t.verified_at, ct.threat_id").Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	for _, r := range rows {
		c := &cs[at[r.CampaignID]]
		c.ThreatIDs = append(c.ThreatIDs, r.ThreatID)
		first, last := r.FirstSeen, r.LastSeen
		if first == nil {
			first = r.VerifiedAt
		}
		if last == nil {
			last = r.VerifiedAt
		}
		if first != nil && (c.FirstSeen == nil || first.Before(*c.FirstSeen)) {
			f := first.UTC()
			c.FirstSeen = &f
		}
		if last != nil && (c.LastSeen == nil || last.After(*c.LastSeen)) {
			l := last.UTC()
			c.LastSeen = &l
		}
	}
	return nil
}

// ListCampaigns reads a page of campaigns by name through campaigns_name_idx.
func (s *Store) ListCampaigns(ctx context.Context, q community.CampaignQuery) ([]community.Campaign, error) {
	if err := core.CheckLimit(q.Limit, core.MaxPage); err != nil {
		return nil, err
	}
	var rows []campaignRow
	sel := s.db.NewSelect().Model(&rows)
	if q.AfterID != "" {
		sel = sel.Where("(name > ? OR (name = ? AND id > ?))", q.AfterName, q.AfterName, q.AfterID)
	}
	if err := sel.OrderExpr("name, id").Limit(int64(q.Limit)).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	out := make([]community.Campaign, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	for chunk := range slices.Chunk(out, 100) {
		if err := s.members(ctx, chunk); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CampaignMembers reads every verified report's campaigns.
func (s *Store) CampaignMembers(ctx context.Context) ([]community.CampaignMember, error) {
	var rows []struct {
		ThreatID    string    `bun:"threat_id"`
		ID          string    `bun:"id"`
		Name        string    `bun:"name"`
		Description string    `bun:"description"`
		CreatedAt   time.Time `bun:"created_at"`
		UpdatedAt   time.Time `bun:"updated_at"`
	}
	// From the members, each report checked verified by its key: a join
	// SQLite may start from threats reads every verified report.
	if err := s.db.NewSelect().TableExpr("campaign_threats AS ct").Join("JOIN campaigns AS cp ON cp.id = ct.campaign_id").
		ColumnExpr("ct.threat_id, cp.id, cp.name, cp.description, cp.created_at, cp.updated_at").
		Where("EXISTS (SELECT 1 FROM threats AS t WHERE t.id = ct.threat_id AND t.status = ?)", core.StatusVerified).OrderExpr("ct.threat_id, cp.name, cp.id").Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	out := make([]community.CampaignMember, len(rows))
	for i, r := range rows {
		out[i] = community.CampaignMember{ThreatID: r.ThreatID, Ref: core.CampaignRef{ID: r.ID, Name: r.Name, Description: r.Description,
			CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}}
	}
	return out, nil
}

// SharedIndicatorGroups reads threat_indicators once in key order (its
// primary key: no sort, no grouping table, whatever its size), each row's
// report checked verified by its primary key, and keeps the q.Limit
// largest groups of q.MinSize..q.MaxSize reports.
func (s *Store) SharedIndicatorGroups(ctx context.Context, q community.IndicatorGroupQuery) ([]community.IndicatorGroup, error) {
	if err := core.CheckLimit(q.Limit, core.MaxPage); err != nil {
		return nil, err
	}
	if q.MinSize < 2 || q.MaxSize < q.MinSize {
		return nil, core.Invalid("size", "groups have 2 or more reports, at most MaxSize (got %d..%d)", q.MinSize, q.MaxSize)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT ti.key, ti.threat_id FROM threat_indicators AS ti
WHERE EXISTS (SELECT 1 FROM threats AS t WHERE t.id = ti.threat_id AND t.status = ?) ORDER BY ti.key, ti.threat_id`, string(core.StatusVerified))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		out  []community.IndicatorGroup
		cur  community.IndicatorGroup
		over bool // the current key has more than MaxSize reports
	)
	flush := func() {
		if over || len(cur.ThreatIDs) < q.MinSize {
			return
		}
		out = append(out, cur)
		if len(out) > 2*q.Limit {
			// Keep the largest; the smaller half goes.
			slices.SortStableFunc(out, func(a, b community.IndicatorGroup) int { return len(b.ThreatIDs) - len(a.ThreatIDs) })
			out = slices.Clip(out[:q.Limit])
		}
	}
	for rows.Next() {
		var key, id string
		if err := rows.Scan(&key, &id); err != nil {
			return nil, err
		}
		if key != cur.Key {
			flush()
			cur, over = community.IndicatorGroup{Key: key}, false
		}
		if over {
			continue
		}
		if len(cur.ThreatIDs) == q.MaxSize {
			over, cur.ThreatIDs = true, nil
			continue
		}
		cur.ThreatIDs = append(cur.ThreatIDs, id)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	flush()
	slices.SortStableFunc(out, func(a, b community.IndicatorGroup) int {
		return cmp.Or(len(b.ThreatIDs)-len(a.ThreatIDs), strings.Compare(a.Key, b.Key))
	})
	return out[:min(len(out), q.Limit)], nil
}

// textBatch bounds the texts handed over at once.
const textBatch = 500

// EachVerifiedText streams every verified report's texts in one query.
func (s *Store) EachVerifiedText(ctx context.Context, fn func([]community.ReportText) error) error {
	q := `SELECT t.id, t.resource_identifier, d.tags, d.threat_description, d.payload_description
FROM threats AS t JOIN threat_details AS d ON d.threat_id = t.id WHERE t.status = ?`
	if s.dialect == Postgres {
		q = strings.Replace(q, "d.tags", "d.tags::text", 1)
	} else {
		// One pass over threats in storage order, not a row look-up per
		// report through the status index (as the index load).
		q = strings.Replace(q, "WHERE t.status", "WHERE +t.status", 1)
	}
	rows, err := s.db.QueryContext(ctx, q, string(core.StatusVerified))
	if err != nil {
		return err
	}
	return eachBatch(rows, textBatch, func(rows *sql.Rows) (community.ReportText, error) {
		var (
			r             community.ReportText
			tags, payload sql.NullString
		)
		if err := rows.Scan(&r.ID, &r.ResourceIdentifier, &tags, &r.ThreatDescription, &payload); err != nil {
			return r, err
		}
		r.PayloadDescription = payload.String
		if tags.Valid && tags.String != "" && tags.String != "[]" {
			if err := json.Unmarshal([]byte(tags.String), &r.Tags); err != nil {
				return r, fmt.Errorf("report %s: tags: %w", r.ID, err)
			}
		}
		return r, nil
	}, fn)
}
