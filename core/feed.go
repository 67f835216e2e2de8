package core

import "time"

// What happened to a report, as feed consumers see it (docs/indicators.md,
// "How feed consumers see changes").
const (
	// ChangeVerified: the report became visible here, verified by a
	// reviewer or imported.
	ChangeVerified = "verified"
	// ChangeRevised: a change to a verified report was applied (an approved
	// revision, an upstream update).
	ChangeRevised = "revised"
	// ChangeWithdrawn: a verified report was rejected (withdrawn), by a
	// reviewer or upstream.
	ChangeWithdrawn = "withdrawn"
	// ChangeDisputed: false-positive votes put a verified report back in
	// review (it stays published; its confidence drops).
	ChangeDisputed = "disputed"
	// ChangeKept: a reviewer kept a disputed report, closing the dispute.
	ChangeKept = "kept"
)

// FeedEvent is one change to what the service publishes. Seq is assigned in
// commit order and At never decreases with Seq, so (At, Seq) order is commit
// order: a consumer that resumes after (At, Seq) sees every later change
// exactly once (decision 0002).
type FeedEvent struct {
	Seq      int64
	At       time.Time
	ThreatID string
	Registry string
	Kind     string // ChangeVerified, ChangeRevised, ChangeWithdrawn, ChangeDisputed, ChangeKept
	Version  int    // the report's content version after the change
}

// FeedQuery selects feed events in [From, To) after a keyset position, in
// commit order.
type FeedQuery struct {
	From, To time.Time
	Registry string
	// Published selects the reports that became visible in the window and
	// are still verified (one ChangeVerified event each): the plain
	// /threat-feed. Otherwise every change is listed.
	Published bool
	// Kind selects one kind of change (e.g. ChangeWithdrawn); "" = all.
	Kind string
	// Latest selects only each report's latest change: a report changed
	// again later is listed there, once (TAXII collections).
	Latest bool
	// ObjectIDs selects the reports published as one of these STIX objects
	// (core.STIXObjectIDs); at most MaxGetThreats.
	ObjectIDs []string
	AfterAt   time.Time
	AfterSeq  int64
	Limit     int
}

// FeedItem is a feed event with the report as it is now.
type FeedItem struct {
	Event  FeedEvent
	Threat Threat
}
