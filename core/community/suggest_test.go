package community

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
	"github.com/threatd/threatd/core/ioc"
)

// store is a test double of the port: the texts, groups and members it is
// given.
type store struct {
	texts   []ReportText
	groups  []IndicatorGroup
	members []CampaignMember
	iocs    map[string][]ioc.IOC // a report's stored indicators
}

func (s store) GetThreat(_ context.Context, id string) (core.Threat, error) {
	for _, r := range s.texts {
		if r.ID == id {
			return core.Threat{ID: r.ID, ResourceIdentifier: r.ResourceIdentifier, IOCs: s.iocs[id]}, nil
		}
	}
	return core.Threat{}, core.ErrNotFound
}

func (s store) SharedIndicatorGroups(context.Context, IndicatorGroupQuery) ([]IndicatorGroup, error) {
	return s.groups, nil
}

func (s store) EachVerifiedText(_ context.Context, fn func([]ReportText) error) error {
	for chunk := range slices.Chunk(s.texts, 7) {
		if err := fn(chunk); err != nil {
			return err
		}
	}
	return nil
}

func (s store) CampaignMembers(context.Context) ([]CampaignMember, error) { return s.members, nil }

func (s store) GetThreats(_ context.Context, ids []string) ([]core.Threat, error) {
	var out []core.Threat
	for _, r := range s.texts {
		if slices.Contains(ids, r.ID) {
			out = append(out, core.Threat{ID: r.ID, ResourceIdentifier: r.ResourceIdentifier,
				Details: core.Details{ThreatDescription: r.ThreatDescription, PayloadDescription: r.PayloadDescription}})
		}
	}
	return out, nil
}

const wormText = `The package runs a postinstall script that reads the npm token from ~/.npmrc and the GitHub token
from the environment, publishes itself to every package the token can write with a bumped patch version, and
posts the collected secrets to a webhook. It then creates a public repository named after the victim.`

func TestSuggest(t *testing.T) {
	var texts []ReportText
	for i := range 5 {
		name := fmt.Sprintf("worm-pkg-%d", i)
		texts = append(texts, ReportText{ID: fmt.Sprintf("w%d", i), ResourceIdentifier: name,
			ThreatDescription: "Malicious code in " + name,
			// The copies differ in the package's name and a hash.
			PayloadDescription: strings.ReplaceAll(wormText, "webhook", fmt.Sprintf("webhook (sha256 %064x) by %s", i+1, name))})
	}
	texts = append(texts,
		ReportText{ID: "other", ResourceIdentifier: "typo", ThreatDescription: "A typosquat of a popular HTTP library that downloads a second stage binary from a paste site at import time and runs it"},
		ReportText{ID: "short1", ResourceIdentifier: "a", ThreatDescription: "Malicious code in a"},
		ReportText{ID: "short2", ResourceIdentifier: "b", ThreatDescription: "Malicious code in b"},
		ReportText{ID: "t1", ResourceIdentifier: "x", Tags: []string{"Campaign:Lazarus"}},
		ReportText{ID: "t2", ResourceIdentifier: "y", Tags: []string{"campaign-lazarus", "token-stealer"}},
		ReportText{ID: "t3", ResourceIdentifier: "z", Tags: []string{"campaigns"}},
	)
	huge := make([]string, MaxGroup+1)
	for i := range huge {
		huge[i] = fmt.Sprintf("h%04d", i)
	}
	st := store{texts: texts, groups: []IndicatorGroup{
		// As storage groups them: by the look-up key, a hash.
		{Key: ioc.Key(ioc.Domain, "c2.worm.invalid"), ThreatIDs: []string{"w0", "w1"}},
		{Key: ioc.Key(ioc.URL, "http://covered.invalid/x"), ThreatIDs: []string{"w2", "w3"}},
		{Key: ioc.Key(ioc.Hash, strings.Repeat("ab", 32)), ThreatIDs: []string{"w3", "w4"}},
		{Key: ioc.Key(ioc.Domain, "everywhere.invalid"), ThreatIDs: huge},
	}, members: []CampaignMember{{ThreatID: "w2", Ref: core.CampaignRef{ID: "c1"}}, {ThreatID: "w3", Ref: core.CampaignRef{ID: "c1"}}},
		iocs: map[string][]ioc.IOC{
			"w0": {{Type: ioc.URL, Value: "http://c2.worm.invalid/gate", Confidence: ioc.ConfidenceHigh}, {Type: ioc.Domain, Value: "c2.worm.invalid", Confidence: ioc.ConfidenceHigh}},
			"w3": {{Type: ioc.Hash, Value: strings.Repeat("ab", 32), Confidence: ioc.ConfidenceHigh}},
		}}
	res, err := Suggest(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, s := range res.Suggestions {
		got[s.Reason+" "+s.Detail] = s.ThreatIDs
	}
	var text []string
	for k, v := range got {
		if strings.HasPrefix(k, ReasonText) {
			text = v
		}
	}
	if !slices.Equal(text, []string{"w0", "w1", "w2", "w3", "w4"}) {
		t.Errorf("near-duplicate texts: %v (all: %v)", text, got)
	}
	for _, s := range res.Suggestions {
		if s.Reason == ReasonText && (!strings.Contains(s.Detail, "The package runs a postinstall script") || s.Similarity < float64(Similar)/Hashes) {
			t.Errorf("near-duplicate detail %q, similarity %v", s.Detail, s.Similarity)
		}
	}
	// Each shared indicator is named, never by its look-up key.
	if !slices.Equal(got[ReasonIndicator+" domain c2.worm.invalid"], []string{"w0", "w1"}) ||
		!slices.Equal(got[ReasonIndicator+" hash "+strings.Repeat("ab", 32)], []string{"w3", "w4"}) {
		t.Errorf("shared indicators: %v", got)
	}
	for _, s := range res.Suggestions {
		if s.Reason == ReasonIndicator && strings.Contains(s.Detail, ioc.Key(ioc.Domain, "c2.worm.invalid")) {
			t.Errorf("a suggestion named by its key: %q", s.Detail)
		}
	}
	if !slices.Equal(got[ReasonTag+" lazarus"], []string{"t1", "t2"}) {
		t.Errorf("campaign tag: %v", got)
	}
	if len(res.Suggestions) != 4 || res.Covered != 1 || len(res.TooLarge) != 1 || res.TooLarge[0].Size != MaxGroup+1 || res.Reports != len(texts) {
		t.Errorf("result: %d suggestions, %d covered, too large %v, %d reports", len(res.Suggestions), res.Covered, res.TooLarge, res.Reports)
	}
	if res.Suggestions[0].Reason != ReasonText {
		t.Errorf("not largest first: %v", res.Suggestions[0])
	}
}

func TestCampaignTag(t *testing.T) {
	for tag, want := range map[string]string{"campaign:Shai-Hulud": "shai-hulud", "Campaign=x": "x", "campaign_y": "y", "campaign-z ": "z",
		"campaign": "", "campaigns": "", "campaign:": "", "my-campaign": ""} {
		if got, ok := CampaignTag(tag); got != want || ok != (want != "") {
			t.Errorf("%q: %q %v", tag, got, ok)
		}
	}
}

// shingles is the exact set of a text's shingles, as Signature reads it.
func shingles(r ReportText) map[string]bool {
	ws := Words(r)
	out := map[string]bool{}
	for i := 0; i+Shingle <= len(ws); i++ {
		out[strings.Join(ws[i:i+Shingle], " ")] = true
	}
	return out
}

func jaccard(a, b map[string]bool) float64 {
	inter := 0
	for k := range a {
		if b[k] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// On the 29,604 real OSV reports: the near-duplicate groups, and how many
// of their members are not in fact alike (exact similarity of their
// shingles to their group's first report under one half).
func TestNearDuplicatesOfRealReports(t *testing.T) {
	dir := coretest.Reference(t, "osv-malicious-full")
	ecos, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var texts []ReportText
	for _, e := range ecos {
		zr, err := zip.OpenReader(filepath.Join(dir, e.Name(), "all.zip"))
		if err != nil {
			continue
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				ID, Summary, Details, Withdrawn string
				Affected                        []struct {
					Package struct{ Name string } `json:"package"`
				} `json:"affected"`
			}
			err = json.NewDecoder(rc).Decode(&rec)
			rc.Close()
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			if rec.Withdrawn != "" || len(rec.Affected) == 0 {
				continue
			}
			texts = append(texts, ReportText{ID: rec.ID, ResourceIdentifier: rec.Affected[0].Package.Name, ThreatDescription: rec.Summary, PayloadDescription: rec.Details})
		}
		zr.Close()
	}
	start := time.Now()
	var (
		idx  []int
		sigs [][Hashes]uint32
	)
	for i, r := range texts {
		if sig, ok := Signature(r); ok {
			idx, sigs = append(idx, i), append(sigs, sig)
		}
	}
	groups := nearDuplicates(sigs)
	took := time.Since(start)
	members, wrong, largest, tooLarge := 0, 0, 0, 0
	for _, g := range groups {
		if len(g.members) > MaxGroup {
			tooLarge++
			continue
		}
		largest = max(largest, len(g.members))
		first := shingles(texts[idx[g.members[0]]])
		for _, m := range g.members[1:] {
			members++
			if jaccard(first, shingles(texts[idx[m]])) < 0.5 {
				wrong++
			}
		}
	}
	if os.Getenv("PEEK") != "" {
		for _, g := range groups[:min(15, len(groups))] {
			r := texts[idx[g.members[0]]]
			t.Logf("GROUP %d: %s | %.300q", len(g.members), r.ID, Text(r))
		}
	}
	if members == 0 || wrong*100 > members || len(groups) < 10 {
		t.Errorf("%d of %d members joined are not alike to their group's first; %d groups", wrong, members, len(groups))
	}
	t.Logf("%d reports, %d with text enough to compare; %d groups (largest %d, %d over %d), %d members joined, %d not alike; %s",
		len(texts), len(sigs), len(groups), largest, tooLarge, MaxGroup, members, wrong, took.Round(time.Millisecond))
	if len(texts) < 29000 {
		t.Fatalf("read %d reports, want the 29,604", len(texts))
	}
}
