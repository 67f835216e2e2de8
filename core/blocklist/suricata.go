package blocklist

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"

	"github.com/threatd/threatd/core"
)

// DefaultSIDBase is blocklists.suricata_sid_base's default: the first sid
// of the rules (4,100,000 and up: outside the ranges the big public rule
// sets use).
const DefaultSIDBase = 4_100_000

// RulesPerDomain is how many rules a domain gets (dns.query, tls.sni,
// http.host); an address gets one.
const RulesPerDomain = 3

// Rule is one indicator's rules as rendered: its Listed, the number storage
// gave it and the revision.
type Rule struct {
	Listed
	Number int64
	Rev    int
}

// SIDs are an indicator's sids: base + 3×(number − 1) + k, k = 0 for the
// DNS rule (or an address's rule), 1 for TLS, 2 for HTTP.
func (r Rule) SIDs(base int64) (first int64, err error) {
	first = base + RulesPerDomain*(r.Number-1)
	if r.Number < 1 || first+RulesPerDomain-1 > math.MaxUint32 {
		return 0, fmt.Errorf("rule number %d of %s is past the 32-bit sids above %d", r.Number, r.Indicator, base)
	}
	return first, nil
}

// RenderSuricata writes the rules: a header, then per domain an alert
// dns, an alert tls and an alert http rule, per address an alert ip rule,
// in the rules' order. The same rules give the same bytes.
func RenderSuricata(w io.Writer, rules []Rule, base int64) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	domains := 0
	for _, r := range rules {
		if r.Domain {
			domains++
		}
	}
	fmt.Fprintf(bw, "# threatd Suricata rules: %s (%s, %s) from the verified reports.\n",
		core.Count(domains*RulesPerDomain+len(rules)-domains, "rule", "rules"),
		core.Count(domains, "domain", "domains"), core.Count(len(rules)-domains, "address", "addresses"))
	fmt.Fprintf(bw, "# sid = %d + 3 x (indicator number - 1) (+1 TLS, +2 HTTP); rev moves when the report named changes.\n", base)
	for _, r := range rules {
		sid, err := r.SIDs(base)
		if err != nil {
			return err
		}
		if !r.Domain {
			fmt.Fprintf(bw, "alert ip any any <> %s any (msg:\"threatd: traffic with reported address %s (threat %s)\"; classtype:trojan-activity; sid:%d; rev:%d; metadata:threatd_threat %s;)\n",
				r.Value, r.Value, r.ThreatID, sid, r.Rev, r.ThreatID)
			continue
		}
		// dotprefix: the name and every subdomain (".evil.example" ends
		// ".x.evil.example" and ".evil.example", not ".notevil.example").
		for k, m := range [RulesPerDomain][3]string{
			{"dns", "dns.query", "DNS query for"},
			{"tls", "tls.sni", "TLS SNI of"},
			{"http", "http.host", "HTTP Host of"},
		} {
			fmt.Fprintf(bw, "alert %s any any -> any any (msg:\"threatd: %s reported domain %s (threat %s)\"; %s; dotprefix; content:\".%s\"; nocase; endswith; classtype:trojan-activity; sid:%d; rev:%d; metadata:threatd_threat %s;)\n",
				m[0], m[2], r.Value, r.ThreatID, m[1], r.Value, sid+int64(k), r.Rev, r.ThreatID)
		}
	}
	return bw.Flush()
}

// ruleState is the Suricata rules as last rendered, and the numbers and
// revisions storage gave each listed indicator.
type ruleState struct {
	rgen  uint64
	done  bool
	body  []byte
	etag  string
	known map[string]ruleID // by indicator
}

// ruleID is what storage gave an indicator for a basis.
type ruleID struct {
	basis  string
	number int64
	rev    int
}

// Suricata is the rules as the lists are now, and their ETag: rendered
// again only after a listing report changed. Indicators new to the rules,
// or whose report changed, are given their numbers and revisions by
// storage (RuleIDs), shared by every daemon on the database.
func (s *Service) Suricata(ctx context.Context) (body []byte, etag string, err error) {
	if !s.filled.Load() {
		return nil, "", ErrFilling
	}
	s.rules.Lock()
	defer s.rules.Unlock()
	st := &s.ruleState
	if st.done && st.rgen == s.set.RuleGeneration() {
		return st.body, st.etag, nil
	}
	listing, rgen := s.set.Listing()
	if st.known == nil {
		st.known = map[string]ruleID{}
	}
	var ask []core.RuleBasis
	for _, l := range listing {
		if k, ok := st.known[l.Indicator]; !ok || k.basis != l.Basis() {
			ask = append(ask, core.RuleBasis{Indicator: l.Indicator, Basis: l.Basis()})
		}
	}
	for len(ask) > 0 {
		n := min(len(ask), core.MaxRuleIDs)
		got, err := s.store.RuleIDs(ctx, core.RuleIDQuery{Rules: ask[:n]})
		if err != nil {
			return nil, "", fmt.Errorf("suricata rule numbers: %w", err)
		}
		for i, g := range got {
			st.known[g.Indicator] = ruleID{basis: ask[i].Basis, number: g.Number, rev: g.Rev}
		}
		ask = ask[n:]
	}
	rules := make([]Rule, len(listing))
	keep := make(map[string]ruleID, len(listing))
	for i, l := range listing {
		k := st.known[l.Indicator]
		rules[i] = Rule{Listed: l, Number: k.number, Rev: k.rev}
		keep[l.Indicator] = k
	}
	// Sized from the last rendering (about 340 bytes a domain otherwise):
	// growing a 100 MB buffer by doubling cleared and copied it again
	// and again, most of a rendering's time.
	var b bytes.Buffer
	b.Grow(max(len(st.body)+len(st.body)/16, 360*len(rules)) + 4096)
	if err := RenderSuricata(&b, rules, s.sidBase); err != nil {
		return nil, "", err
	}
	// Indicators that left the lists are forgotten here (storage keeps
	// their numbers): memory follows the lists.
	st.known, st.body, st.etag, st.rgen, st.done = keep, b.Bytes(), etagOf(b.Bytes()), rgen, true
	return st.body, st.etag, nil
}

// ExportSuricata writes the Suricata rules as they are in store now, the
// same bytes a daemon on it serves: every verified report read once, rule
// numbers from storage.
func ExportSuricata(ctx context.Context, store Store, sidBase int64) ([]byte, error) {
	s := NewService(store, "")
	s.SetSIDBase(sidBase)
	if err := s.Fill(ctx); err != nil {
		return nil, err
	}
	body, _, err := s.Suricata(ctx)
	return body, err
}
