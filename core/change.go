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

// ChangeBatch is one page of what the daemon's change-feed follower read,
// handed to each of its subscribers in order (the block lists, the
// Suricata rules, the community counts, the SIEM). A batch holds one of:
//   - Changed: the reports a page of the storage change feed named, in any
//     state, once each (their counts or records may have moved);
//   - Published: a page of published changes (verifications, revisions,
//     disputes, withdrawals) in feed order, each with its report as it is
//     now stored, stored indicators included: nothing derives them again.
type ChangeBatch struct {
	Changed   []string
	Published []FeedItem
}
