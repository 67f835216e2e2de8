package core

import (
	"math"
	"time"
)

// CampaignRef names a campaign a report belongs to, as its record shows it.
type CampaignRef struct {
	ID, Name string
}

// Community is what the community says of a verified report besides its
// content (docs/api/records.md, "Community signals"): its sightings, its
// confidence, its open dispute and its campaigns. It changes without the
// report changing, so the daemon keeps it apart (core/community) and adds
// it to a record as it answers.
type Community struct {
	Sightings SightingCounts
	// Confidence is 0..100 (Confidence).
	Confidence int
	// Disputed: false-positive votes have put the report back in the
	// review queue and no reviewer has decided yet.
	Disputed  bool
	Campaigns []CampaignRef
	// ChangedAt is when any of it last changed (zero: never since the
	// report was published); STIX objects that carry it are modified then.
	ChangedAt time.Time
}

// ConfidenceInput is what a report's confidence is worked out from.
type ConfidenceInput struct {
	// Seen counts seen sightings.
	Seen int64
	// Votes counts the false-positive votes counted since the report's
	// last review decision (the submitter's own excluded).
	Votes int
	// Disputed: a dispute is open.
	Disputed bool
	// Record is the submitter's track record, -20..20
	// (SubmitterRecord.Score); 0 for an imported report or a newcomer.
	Record int
}

// Confidence is how sure the service is that a verified report is right,
// 0..100 (docs/api/records.md, "Confidence"): 50 for a reviewer's
// verification, plus the submitter's record (-20..20), plus 10 per tenfold
// of seen sightings (log10(1+seen)*10, at most 30), less 10 per counted
// false-positive vote (at most 30) and 20 more while a dispute is open.
func Confidence(in ConfidenceInput) int {
	c := 50.0 + float64(max(-20, min(20, in.Record)))
	if in.Seen > 0 {
		c += min(30, 10*math.Log10(1+float64(in.Seen)))
	}
	c -= float64(min(30, 10*in.Votes))
	if in.Disputed {
		c -= 20
	}
	return int(math.Round(max(0, min(100, c))))
}

// Score is a submitter's track record as confidence counts it, -20..20:
// 20 × (verified − rejected) / (verified + rejected + 5), so that a
// newcomer starts near 0 and one report moves it little.
func (r SubmitterRecord) Score() int {
	if r.Verified < 0 || r.Rejected < 0 {
		return 0
	}
	return int(math.Round(20 * float64(r.Verified-r.Rejected) / float64(r.Verified+r.Rejected+5)))
}

// Communities say what the community says of reports (core/community's
// View in the daemon).
type Communities interface {
	OfThreat(t Threat) Community
}

// BaseCommunity is what is said of a report before anyone said anything:
// no sightings, the base confidence.
func BaseCommunity(t Threat) Community {
	return Community{Sightings: SightingCounts{ThreatID: t.ID}, Confidence: Confidence(ConfidenceInput{})}
}

// CommunityOf is src's word on t (BaseCommunity when src is nil).
func CommunityOf(src Communities, t Threat) Community {
	if src == nil {
		return BaseCommunity(t)
	}
	return src.OfThreat(t)
}
