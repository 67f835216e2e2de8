package core

import "time"

// Entity names the kind of record a Change is about.
type Entity string

// The entities the change feed reports on.
const (
	EntityUser   Entity = "user"
	EntityToken  Entity = "token"
	EntityThreat Entity = "threat"
)

// Change is one entry of the storage change feed: entity EntityID changed.
// Seq is assigned in commit order, so a follower that has seen Seq n has
// seen every change committed before it; gaps (from rolled-back
// transactions) are never filled later and may be skipped.
type Change struct {
	Seq      int64
	Entity   Entity
	EntityID string
	Op       string // "create", "update", "revoke", ...
	At       time.Time
}
