package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/threatd/threatd/core"
)

// sourceUsers is migration 0029, in Go: reports imported before imports
// were attributed to a source user (issue 57) get theirs, the user named
// after their source (core.SourceUser), created when missing. A community
// report a source was attached to keeps its submitter. Idempotent: a run
// cut short is taken up again at the next start.
var sourceUsers = migrate.Migration{
	Name:    "0029",
	Comment: "source_users",
	Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
		if err := attributeImports(ctx, m.DB()); err != nil {
			return fmt.Errorf("source users: %w", err)
		}
		return nil
	},
}

// attributeImports attributes every imported report without a submitter
// to its source's user, a source at a time.
func attributeImports(ctx context.Context, db bun.IDB) error {
	var sources []string
	if err := db.NewSelect().Table("threats").ColumnExpr("DISTINCT source").
		Where("source IS NOT NULL AND submitter_id IS NULL").Scan(ctx, &sources); err != nil {
		return err
	}
	for _, source := range sources {
		email := core.SourceUserEmail(source)
		now := time.Now().UTC()
		row := userRow{ID: uuid.Must(uuid.NewV7()).String(), Email: email, Name: source, Tier: string(core.TierFree),
			Role: string(core.RoleSubmitter), CreatedAt: now, UpdatedAt: now}
		if _, err := db.NewInsert().Model(&row).On("CONFLICT (email) DO NOTHING").Exec(ctx); err != nil {
			return err
		}
		var id string
		if err := db.NewSelect().Table("users").Column("id").Where("email = ?", email).Scan(ctx, &id); err != nil {
			return err
		}
		if _, err := db.NewUpdate().Table("threats").Set("submitter_id = ?", id).
			Where("source = ? AND submitter_id IS NULL", source).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
