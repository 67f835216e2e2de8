package storage

import (
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

type userRow struct {
	bun.BaseModel `bun:"table:users"`

	ID                 string    `bun:"id,pk"`
	Email              string    `bun:"email,notnull"`
	Name               string    `bun:"name,notnull"`
	Tier               string    `bun:"tier,notnull"`
	Role               string    `bun:"role,notnull"`
	SubmissionsPerHour *int      `bun:"submissions_per_hour"`
	CreatedAt          time.Time `bun:"created_at,notnull"`
	UpdatedAt          time.Time `bun:"updated_at,notnull"`
}

func (r userRow) domain() core.User {
	return core.User{
		ID: r.ID, Email: r.Email, Name: r.Name, Tier: core.Tier(r.Tier), Role: core.Role(r.Role),
		SubmissionsPerHour: r.SubmissionsPerHour, CreatedAt: r.CreatedAt.UTC(),
	}
}

type tokenRow struct {
	bun.BaseModel `bun:"table:api_tokens"`

	ID        string     `bun:"id,pk"`
	UserID    string     `bun:"user_id,notnull"`
	Name      string     `bun:"name,notnull"`
	Hash      string     `bun:"hash,notnull"`
	Hint      string     `bun:"hint,notnull"`
	CreatedAt time.Time  `bun:"created_at,notnull"`
	RevokedAt *time.Time `bun:"revoked_at"`
}

func (r tokenRow) domain() core.Token {
	t := core.Token{ID: r.ID, UserID: r.UserID, Name: r.Name, Hash: r.Hash, Hint: r.Hint, CreatedAt: r.CreatedAt.UTC()}
	if r.RevokedAt != nil {
		at := r.RevokedAt.UTC()
		t.RevokedAt = &at
	}
	return t
}

type changeRow struct {
	bun.BaseModel `bun:"table:changes"`

	Seq      int64     `bun:"seq,pk,autoincrement"`
	Entity   string    `bun:"entity,notnull"`
	EntityID string    `bun:"entity_id,notnull"`
	Op       string    `bun:"op,notnull"`
	At       time.Time `bun:"at,notnull"`
}

func (r changeRow) domain() core.Change {
	return core.Change{Seq: r.Seq, Entity: core.Entity(r.Entity), EntityID: r.EntityID, Op: r.Op, At: r.At.UTC()}
}
