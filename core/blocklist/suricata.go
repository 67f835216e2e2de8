package blocklist

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"strconv"

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
// in the rules' order. The same rules give the same bytes (the bytes
// Service.Suricata serves for them).
func RenderSuricata(w io.Writer, rules []Rule, base int64) error {
	if _, err := io.WriteString(w, suricataHeader(rules, base)); err != nil {
		return err
	}
	body, err := appendRules(nil, rules, base)
	if err != nil {
		return err
	}
	_, err = w.Write(body)
	return err
}

// suricataHeader is the rules' header: what they hold, and how sids and
// revs are given.
func suricataHeader(rules []Rule, base int64) string {
	domains := 0
	for _, r := range rules {
		if r.Domain {
			domains++
		}
	}
	return fmt.Sprintf("# threatd Suricata rules: %s (%s, %s) from the verified reports.\n",
		core.Count(domains*RulesPerDomain+len(rules)-domains, "rule", "rules"),
		core.Count(domains, "domain", "domains"), core.Count(len(rules)-domains, "address", "addresses")) +
		fmt.Sprintf("# sid = %d + 3 x (indicator number - 1) (+1 TLS, +2 HTTP); rev moves when the report named changes.\n", base)
}

// domainRules are a domain's rules: protocol, sticky buffer, what the
// message says is matched.
var domainRules = [RulesPerDomain][3]string{
	{"dns", "dns.query", "DNS query for"},
	{"tls", "tls.sni", "TLS SNI of"},
	{"http", "http.host", "HTTP Host of"},
}

// appendRules appends the rules of rules to b.
func appendRules(b []byte, rules []Rule, base int64) ([]byte, error) {
	for _, r := range rules {
		sid, err := r.SIDs(base)
		if err != nil {
			return b, err
		}
		tail := func(b []byte) []byte {
			b = append(b, " (threat "...)
			b = append(b, r.ThreatID...)
			b = append(b, `)"; `...)
			return b
		}
		end := func(b []byte, sid int64) []byte {
			b = append(b, "classtype:trojan-activity; sid:"...)
			b = strconv.AppendInt(b, sid, 10)
			b = append(b, "; rev:"...)
			b = strconv.AppendInt(b, int64(r.Rev), 10)
			b = append(b, "; metadata:threatd_threat "...)
			b = append(b, r.ThreatID...)
			return append(b, ";)\n"...)
		}
		if !r.Domain {
			b = append(b, "alert ip any any <> "...)
			b = append(b, r.Value...)
			b = append(b, ` any (msg:"threatd: traffic with reported address `...)
			b = append(b, r.Value...)
			b = end(tail(b), sid)
			continue
		}
		// dotprefix: the name and every subdomain (".evil.example" ends
		// ".x.evil.example" and ".evil.example", not ".notevil.example").
		for k, m := range domainRules {
			b = append(b, "alert "...)
			b = append(b, m[0]...)
			b = append(b, ` any any -> any any (msg:"threatd: `...)
			b = append(b, m[2]...)
			b = append(b, " reported domain "...)
			b = append(b, r.Value...)
			b = tail(b)
			b = append(b, m[1]...)
			b = append(b, `; dotprefix; content:".`...)
			b = append(b, r.Value...)
			b = append(b, `"; nocase; endswith; `...)
			b = end(b, sid+int64(k))
		}
	}
	return b, nil
}

// Rules are the Suricata rules as rendered: the header, then runs of
// rules, in order.
type Rules struct {
	parts [][]byte
	size  int
}

// Len is the rules' size in bytes.
func (r Rules) Len() int { return r.size }

// WriteTo writes the rules to w.
func (r Rules) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, p := range r.parts {
		m, err := w.Write(p)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Bytes are the rules in one slice (a copy).
func (r Rules) Bytes() []byte {
	b := make([]byte, 0, r.size)
	for _, p := range r.parts {
		b = append(b, p...)
	}
	return b
}

// Runs of rules: one ends after a rule whose indicator's FNV-1a hash is 0
// modulo runEvery (runEvery rules on average, wherever the rule sits, so
// an indicator joining or leaving the rules changes the run it is in and
// no other), or at runMax rules.
const (
	runEvery = 128
	runMax   = 1024
)

// runEnds says whether a run ends after the rule of indicator.
func runEnds(indicator string) bool {
	h := uint32(2166136261) // FNV-1a, 32 bits
	for i := 0; i < len(indicator); i++ {
		h = (h ^ uint32(indicator[i])) * 16777619
	}
	return h%runEvery == 0
}

// ruleRun is a run of rules as rendered, and the hash of its bytes.
type ruleRun struct {
	body []byte
	sum  [sha256.Size]byte
}

// ruleState is the Suricata rules as last rendered, in runs kept by what
// their rules are, and the numbers and revisions storage gave each listed
// indicator.
type ruleState struct {
	rgen  uint64
	done  bool
	rules Rules
	etag  string
	known map[string]ruleID // by indicator
	// runs are the last rendering's runs, by a hash (seeded: nobody can
	// make two runs collide) of their rules' indicators, reports,
	// numbers and revisions.
	runs map[uint64]ruleRun
	seed maphash.Seed
}

// ruleID is what storage gave an indicator for a basis.
type ruleID struct {
	basis  string
	number int64
	rev    int
}

// Suricata is the rules as the lists are now, and their ETag: rendered
// again only after a listing report changed, and then only the runs of
// rules that changed (the others are the last rendering's bytes).
// Indicators new to the rules, or whose report changed, are given their
// numbers and revisions by storage (RuleIDs), shared by every daemon on
// the database.
func (s *Service) Suricata(ctx context.Context) (rules Rules, etag string, err error) {
	if !s.filled.Load() {
		return Rules{}, "", ErrFilling
	}
	s.rules.Lock()
	defer s.rules.Unlock()
	st := &s.ruleState
	if st.done && st.rgen == s.set.RuleGeneration() {
		return st.rules, st.etag, nil
	}
	listing, rgen := s.set.Listing()
	if st.known == nil {
		st.known, st.seed = map[string]ruleID{}, maphash.MakeSeed()
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
			return Rules{}, "", fmt.Errorf("suricata rule numbers: %w", err)
		}
		for i, g := range got {
			st.known[g.Indicator] = ruleID{basis: ask[i].Basis, number: g.Number, rev: g.Rev}
		}
		ask = ask[n:]
	}
	all := make([]Rule, len(listing))
	keep := make(map[string]ruleID, len(listing))
	for i, l := range listing {
		k := st.known[l.Indicator]
		all[i] = Rule{Listed: l, Number: k.number, Rev: k.rev}
		keep[l.Indicator] = k
	}
	header := []byte(suricataHeader(all, s.sidBase))
	out := Rules{parts: append(make([][]byte, 0, len(all)/runEvery+2), header), size: len(header)}
	tag := sha256.New()
	tag.Write(header)
	runs := make(map[uint64]ruleRun, len(st.runs)+1)
	var h maphash.Hash
	h.SetSeed(st.seed)
	var num [16]byte
	var scratch []byte
	start := 0
	for i, r := range all {
		h.WriteString(r.Indicator)
		h.WriteByte(0)
		h.WriteString(r.ThreatID)
		binary.LittleEndian.PutUint64(num[:8], uint64(r.Number))
		binary.LittleEndian.PutUint64(num[8:], uint64(r.Rev))
		h.Write(num[:])
		if i+1 < len(all) && i+1-start < runMax && !runEnds(r.Indicator) {
			continue
		}
		key := h.Sum64()
		h.Reset()
		run, ok := st.runs[key]
		if !ok {
			// Rendered into a scratch buffer, kept at its size.
			if scratch, err = appendRules(scratch[:0], all[start:i+1], s.sidBase); err != nil {
				return Rules{}, "", err
			}
			body := append([]byte(nil), scratch...)
			run = ruleRun{body: body, sum: sha256.Sum256(body)}
		}
		runs[key] = run
		out.parts, out.size = append(out.parts, run.body), out.size+len(run.body)
		tag.Write(run.sum[:])
		start = i + 1
	}
	// Indicators that left the lists are forgotten here (storage keeps
	// their numbers), and runs no longer in the rules: memory follows the
	// lists.
	sum := tag.Sum(nil)
	st.known, st.runs, st.rules, st.etag, st.rgen, st.done = keep, runs, out, fmt.Sprintf("%q", hex.EncodeToString(sum[:16])), rgen, true
	return st.rules, st.etag, nil
}

// ExportSuricata writes the Suricata rules as they are in store now, the
// same bytes a daemon on it serves: every verified report read once, rule
// numbers from storage.
func ExportSuricata(ctx context.Context, store Store, sidBase int64) (Rules, error) {
	s := NewService(store, "")
	s.SetSIDBase(sidBase)
	if err := s.Fill(ctx); err != nil {
		return Rules{}, err
	}
	rules, _, err := s.Suricata(ctx)
	return rules, err
}
