package storage

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

// ruleIDRow is an indicator's Suricata rule number and revision.
type ruleIDRow struct {
	bun.BaseModel `bun:"table:rule_ids"`

	Number    int64  `bun:"number,pk,autoincrement"`
	Indicator string `bun:"indicator,notnull"`
	Rev       int    `bun:"rev,notnull"`
	Basis     string `bun:"basis,notnull"`
}

// maxRuleText bounds an indicator and a basis: the indicator is a unique
// key.
const maxRuleText = 512

// RuleIDs gives indicators their rule numbers and revisions: a read of the
// unique index on indicator, and a write transaction only when one is new
// or its basis changed (rare: a new or revised report).
func (s *Store) RuleIDs(ctx context.Context, q core.RuleIDQuery) ([]core.RuleID, error) {
	if len(q.Rules) > core.MaxRuleIDs {
		return nil, core.Invalid("rules", "at most %d in one call", core.MaxRuleIDs)
	}
	names := make([]string, len(q.Rules))
	seen := make(map[string]bool, len(q.Rules))
	for i, r := range q.Rules {
		switch {
		case r.Indicator == "" || len(r.Indicator) > maxRuleText:
			return nil, core.Invalid("rules", "an indicator must be 1..%d bytes", maxRuleText)
		case r.Basis == "" || len(r.Basis) > maxRuleText:
			return nil, core.Invalid("rules", "a basis must be 1..%d bytes", maxRuleText)
		case seen[r.Indicator]:
			return nil, core.Invalid("rules", "%q is asked twice", r.Indicator)
		}
		seen[r.Indicator] = true
		names[i] = r.Indicator
	}
	if len(names) == 0 {
		return []core.RuleID{}, nil
	}
	read := func(db bun.IDB) (map[string]ruleIDRow, error) {
		var rows []ruleIDRow
		if err := db.NewSelect().Model(&rows).Where("indicator IN (?)", bun.List(names)).Scan(ctx); err != nil {
			return nil, err
		}
		m := make(map[string]ruleIDRow, len(rows))
		for _, r := range rows {
			m[r.Indicator] = r
		}
		return m, nil
	}
	current := func(m map[string]ruleIDRow) bool {
		for _, r := range q.Rules {
			if got, ok := m[r.Indicator]; !ok || got.Basis != r.Basis {
				return false
			}
		}
		return true
	}
	got, err := read(s.db)
	if err != nil {
		return nil, err
	}
	if !current(got) {
		err = s.write(ctx, func(ctx context.Context, tx *txn) error {
			had, err := read(tx)
			if err != nil {
				return err
			}
			var add []ruleIDRow
			for _, r := range q.Rules {
				old, ok := had[r.Indicator]
				switch {
				case !ok:
					add = append(add, ruleIDRow{Indicator: r.Indicator, Rev: 1, Basis: r.Basis})
				case old.Basis != r.Basis:
					if _, err := tx.NewUpdate().Table("rule_ids").Set("rev = rev + 1").Set("basis = ?", r.Basis).
						Where("indicator = ?", r.Indicator).Exec(ctx); err != nil {
						return err
					}
				}
			}
			if len(add) > 0 {
				// Another daemon may add the same indicator first: its
				// number is then the one kept.
				if _, err := tx.NewInsert().Model(&add).ExcludeColumn("number").On("CONFLICT (indicator) DO NOTHING").Exec(ctx); err != nil {
					return err
				}
			}
			got, err = read(tx)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]core.RuleID, len(q.Rules))
	for i, r := range q.Rules {
		row := got[r.Indicator]
		out[i] = core.RuleID{Indicator: r.Indicator, Number: row.Number, Rev: row.Rev}
	}
	return out, nil
}
