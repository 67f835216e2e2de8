// Campaign suggestions (docs/campaigns.md, "Suggestions"): groups of
// verified reports that may be one campaign — reports that name the same
// indicator of compromise, that carry the same campaign tag, or whose
// texts are nearly the same. No pair of reports is ever compared blindly:
// indicators are grouped by storage, tags by a map, and texts through
// MinHash signatures of their word shingles, whose bands put similar
// texts in the same bucket (locality-sensitive hashing); only reports
// sharing a bucket are compared.

package community

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// SuggestStore is what suggestions read.
type SuggestStore interface {
	SharedIndicatorGroups(ctx context.Context, q IndicatorGroupQuery) ([]IndicatorGroup, error)
	EachVerifiedText(ctx context.Context, fn func([]ReportText) error) error
	CampaignMembers(ctx context.Context) ([]CampaignMember, error)
	GetThreats(ctx context.Context, ids []string) ([]core.Threat, error)
	GetThreat(ctx context.Context, id string) (core.Threat, error)
}

// The reasons of a suggestion.
const (
	ReasonIndicator = "shared_indicator"
	ReasonTag       = "campaign_tag"
	ReasonText      = "near_duplicate_text"
)

// Bounds and thresholds.
const (
	// MaxGroup is the most reports a suggestion holds: a larger group
	// (a generic indicator, a scanner's boilerplate text) is counted in
	// Result.TooLarge, not suggested.
	MaxGroup = 1000
	// Shingle is the words of a shingle; MinShingles the fewest shingles
	// a text needs to be compared (shorter ones say too little).
	Shingle     = 5
	MinShingles = 8
	// Hashes is a MinHash signature's length, in Bands bands of
	// Hashes/Bands rows: texts whose estimated similarity is about
	// (1/Bands)^(Bands/Hashes) or more share a band's bucket.
	Hashes = 16
	Bands  = 4
	// Similar is the least estimated Jaccard similarity of two texts'
	// shingles (matching signature positions out of Hashes) that makes
	// them near-duplicates: 12 of 16.
	Similar = 12
)

// Suggestion is a group of reports that may be one campaign, and why.
type Suggestion struct {
	Reason string
	// Detail says what they share: the indicator ("domain evil.example"),
	// the tag, or the least similarity between the texts joined.
	Detail    string
	ThreatIDs []string
	// Similarity is, for near-duplicate texts, the least estimated
	// similarity of a joined pair (0..1).
	Similarity float64
}

// TooLarge is a group left out for its size.
type TooLarge struct {
	Reason, Detail string
	Size           int
}

// Result is every suggestion, largest first, and what was read.
type Result struct {
	Suggestions []Suggestion
	TooLarge    []TooLarge
	Reports     int
	// Covered counts groups left out because one campaign already holds
	// all their reports.
	Covered int
	// IndicatorsCapped: more indicators are shared than one read returns
	// (core.MaxPage groups, the largest): the smaller ones were not read.
	IndicatorsCapped bool
	Took             time.Duration
}

// Suggest reads the verified reports once and proposes groups.
func Suggest(ctx context.Context, st SuggestStore) (Result, error) {
	start := time.Now()
	var out Result
	members, err := st.CampaignMembers(ctx)
	if err != nil {
		return out, err
	}
	inCampaign := map[string][]string{} // report → campaigns
	for _, m := range members {
		inCampaign[m.ThreatID] = append(inCampaign[m.ThreatID], m.Ref.ID)
	}
	add := func(s Suggestion) {
		if len(s.ThreatIDs) > MaxGroup {
			out.TooLarge = append(out.TooLarge, TooLarge{Reason: s.Reason, Detail: s.Detail, Size: len(s.ThreatIDs)})
			return
		}
		if covered(s.ThreatIDs, inCampaign) {
			out.Covered++
			return
		}
		slices.Sort(s.ThreatIDs)
		out.Suggestions = append(out.Suggestions, s)
	}

	groups, err := st.SharedIndicatorGroups(ctx, IndicatorGroupQuery{MinSize: 2, MaxSize: MaxGroup, Limit: core.MaxPage})
	if err != nil {
		return out, err
	}
	out.IndicatorsCapped = len(groups) == core.MaxPage
	for _, g := range groups {
		if covered(g.ThreatIDs, inCampaign) {
			out.Covered++
			continue
		}
		named, err := indicatorOf(ctx, st, g)
		if err != nil {
			return out, err
		}
		add(Suggestion{Reason: ReasonIndicator, Detail: named, ThreatIDs: g.ThreatIDs})
	}

	// One pass over the texts: campaign tags grouped, signatures kept.
	tagged := map[string][]string{}
	var (
		// The compared reports' ids, as 16 bytes when they are UUIDs
		// (storage's are; others are kept in odd).
		ids  []uuid.UUID
		odd  = map[int]string{}
		sigs [][Hashes]uint32
	)
	err = st.EachVerifiedText(ctx, func(batch []ReportText) error {
		for _, r := range batch {
			out.Reports++
			for _, tag := range r.Tags {
				if name, ok := CampaignTag(tag); ok {
					if l := tagged[name]; !slices.Contains(l, r.ID) {
						tagged[name] = append(l, r.ID)
					}
				}
			}
			if sig, ok := Signature(r); ok {
				id, err := uuid.Parse(r.ID)
				if err != nil {
					odd[len(ids)] = r.ID
				}
				ids, sigs = append(ids, id), append(sigs, sig)
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return out, err
	}
	for _, name := range slices.Sorted(maps.Keys(tagged)) {
		if l := tagged[name]; len(l) >= 2 {
			add(Suggestion{Reason: ReasonTag, Detail: name, ThreatIDs: l})
		}
	}
	groups2 := nearDuplicates(sigs)
	sigs = nil
	// What each group's first report says, read again for the groups
	// only: the pass keeps no text.
	leaders := make([]string, len(groups2))
	for i, g := range groups2 {
		leaders[i] = idOf(ids, odd, g.members[0])
	}
	excerpts := map[string]string{}
	for chunk := range slices.Chunk(leaders, core.MaxGetThreats) {
		ts, err := st.GetThreats(ctx, chunk)
		if err != nil {
			return out, err
		}
		for _, t := range ts {
			excerpts[t.ID] = Excerpt(ReportText{ID: t.ID, ResourceIdentifier: t.ResourceIdentifier, ThreatDescription: t.Details.ThreatDescription,
				PayloadDescription: t.Details.PayloadDescription}, ExcerptRunes)
		}
	}
	for i, g := range groups2 {
		s := Suggestion{Reason: ReasonText, Similarity: g.least, ThreatIDs: make([]string, len(g.members))}
		for j, m := range g.members {
			s.ThreatIDs[j] = idOf(ids, odd, m)
		}
		s.Detail = fmt.Sprintf("texts at least %.0f%% alike (estimated Jaccard similarity of their %d-word shingles), such as “%s”",
			100*g.least, Shingle, excerpts[leaders[i]])
		add(s)
	}
	slices.SortStableFunc(out.Suggestions, func(a, b Suggestion) int {
		return cmp.Or(len(b.ThreatIDs)-len(a.ThreatIDs), strings.Compare(a.Reason, b.Reason), strings.Compare(a.Detail, b.Detail))
	})
	out.Took = time.Since(start)
	return out, nil
}

// indicatorOf names the indicator a group shares ("domain c2.example"):
// storage groups reports by the indicator's look-up key (a hash), so it
// is read back from the stored indicators of the group's first report
// still stored (a report withdrawn since is skipped).
func indicatorOf(ctx context.Context, st SuggestStore, g IndicatorGroup) (string, error) {
	for _, id := range g.ThreatIDs[:min(len(g.ThreatIDs), 3)] {
		t, err := st.GetThreat(ctx, id)
		if errors.Is(err, core.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", err
		}
		for _, ind := range t.IOCs {
			if ioc.Searchable(ind) && ioc.Key(ind.Type, ind.Value) == g.Key {
				return ind.Type + " " + ind.Value, nil
			}
		}
	}
	return "indicator " + g.Key, nil
}

// covered says whether one campaign already holds every report of ids.
func covered(ids []string, inCampaign map[string][]string) bool {
	first := inCampaign[ids[0]]
	for _, c := range first {
		all := true
		for _, id := range ids[1:] {
			if !slices.Contains(inCampaign[id], c) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// CampaignTag reads a campaign tag: "campaign:NAME", "campaign=NAME",
// "campaign-NAME" or "campaign_NAME" (any case), the name lowercased.
func CampaignTag(tag string) (string, bool) {
	t := strings.ToLower(strings.TrimSpace(tag))
	rest, ok := strings.CutPrefix(t, "campaign")
	if !ok || len(rest) < 2 || !strings.ContainsRune(":=-_", rune(rest[0])) {
		return "", false
	}
	name := strings.TrimSpace(rest[1:])
	return name, name != ""
}

// idOf is the id of the i-th compared report.
func idOf(ids []uuid.UUID, odd map[int]string, i int32) string {
	if id, ok := odd[int(i)]; ok {
		return id
	}
	return ids[i].String()
}

// group is a set of near-duplicate texts (indexes of the signatures) and
// the least similarity of the pairs that joined them.
type group struct {
	members []int32
	least   float64
}

// nearDuplicates groups the signatures whose estimated similarity is at
// least Similar/Hashes: each band's values are hashed into a bucket key,
// the keys sorted, and only signatures sharing a key compared; a pair that
// is alike enough joins their groups.
func nearDuplicates(sigs [][Hashes]uint32) []group {
	n := len(sigs)
	parent := make([]int32, n)
	least := make([]float64, n)
	for i := range parent {
		parent[i], least[i] = int32(i), 1
	}
	find := func(i int32) int32 {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	type bucket struct {
		key uint64
		i   int32
	}
	rows := Hashes / Bands
	keys := make([]bucket, n)
	for b := range Bands {
		for i, s := range sigs {
			k := uint64(b)
			for r := range rows {
				k = mix(k ^ uint64(s[b*rows+r]))
			}
			keys[i] = bucket{k, int32(i)}
		}
		slices.SortFunc(keys, func(x, y bucket) int { return cmp.Compare(x.key, y.key) })
		start := 0
		for j := 1; j < n; j++ {
			if keys[j].key != keys[j-1].key {
				start = j
				continue
			}
			// Compare with the first of the bucket: a bucket of one payload
			// copied a thousand times costs a thousand comparisons, not a
			// million.
			a, c := keys[start].i, keys[j].i
			same := alike(&sigs[a], &sigs[c])
			if same < Similar {
				continue
			}
			ra, rc := find(a), find(c)
			sim := float64(same) / Hashes
			if ra != rc {
				parent[rc] = ra
				least[ra] = min(least[ra], least[rc], sim)
			} else {
				least[ra] = min(least[ra], sim)
			}
		}
	}
	members := map[int32][]int32{}
	for i := range n {
		r := find(int32(i))
		members[r] = append(members[r], int32(i))
	}
	var out []group
	for r, m := range members {
		if len(m) >= 2 {
			out = append(out, group{members: m, least: least[r]})
		}
	}
	slices.SortFunc(out, func(a, b group) int {
		return cmp.Or(len(b.members)-len(a.members), cmp.Compare(a.members[0], b.members[0]))
	})
	return out
}

// alike counts the positions where two signatures agree.
func alike(a, b *[Hashes]uint32) int {
	n := 0
	for i := range a {
		if a[i] == b[i] {
			n++
		}
	}
	return n
}

// SuggestionsTTL is how long computed suggestions are served again: at a million
// reports a pass takes tens of seconds.
const SuggestionsTTL = 5 * time.Minute

// Suggestions keeps the last suggestions for the API and the web site: one pass
// at a time, reused for SuggestionsTTL.
type Suggestions struct {
	mu  sync.Mutex
	at  time.Time
	res Result
}

// Get returns the suggestions and when they were worked out, working them
// out first when refresh is set, when there are none yet, or when they are
// older than SuggestionsTTL.
func (c *Suggestions) Get(ctx context.Context, st SuggestStore, refresh bool) (Result, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if refresh || c.at.IsZero() || time.Since(c.at) > SuggestionsTTL {
		res, err := Suggest(ctx, st)
		if err != nil {
			return Result{}, time.Time{}, err
		}
		c.res, c.at = res, time.Now().UTC()
	}
	return c.res, c.at, nil
}

// Last returns the suggestions last worked out, if any, without a pass
// (waiting for one under way).
func (c *Suggestions) Last() (Result, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.res, c.at, !c.at.IsZero()
}
