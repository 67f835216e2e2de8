package blocklist

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// RuleIDs as the storage contract says it (storagetest's RuleIDs checks
// each backend against it).
func (s *store) RuleIDs(_ context.Context, q core.RuleIDQuery) ([]core.RuleID, error) {
	if s.ids == nil {
		s.ids = map[string]*core.RuleID{}
		s.bases = map[string]string{}
	}
	s.ruleCalls++
	out := make([]core.RuleID, len(q.Rules))
	for i, r := range q.Rules {
		id, ok := s.ids[r.Indicator]
		switch {
		case !ok:
			s.next++
			id = &core.RuleID{Indicator: r.Indicator, Number: s.next, Rev: 1}
			s.ids[r.Indicator] = id
		case s.bases[r.Indicator] != r.Basis:
			id.Rev++
		}
		s.bases[r.Indicator] = r.Basis
		out[i] = *id
	}
	return out, nil
}

// ruleLine is the grammar the rules keep to: a header of action, protocol,
// addresses, ports and direction, then options, each "keyword" or
// "keyword:value;" with a quoted value free of '"', ';' and '\'.
var (
	ruleLine   = regexp.MustCompile(`^alert (dns|tls|http|ip) any any (->|<>) (\S+) any \((.*)\)$`)
	ruleOption = regexp.MustCompile(`^(msg:"[^";\\]*"|content:"[^";\\|]*"|dns\.query|tls\.sni|http\.host|dotprefix|nocase|endswith|classtype:trojan-activity|sid:[1-9][0-9]*|rev:[1-9][0-9]*|metadata:threatd_threat [0-9A-Za-z-]+)$`)
)

// parsedRule is what the checks read of one rule.
type parsedRule struct {
	proto, dest, msg, content, threat string
	sid, rev                          int64
}

// parseRules checks every line of body against the grammar and returns
// the rules by sid; a sid used twice fails.
func parseRules(t *testing.T, body string) map[int64]parsedRule {
	t.Helper()
	out := map[int64]parsedRule{}
	for n, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if strings.HasPrefix(line, "# ") {
			continue
		}
		m := ruleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %d is not a rule: %q", n+1, line)
		}
		r := parsedRule{proto: m[1], dest: m[3]}
		opts := m[4]
		if !strings.HasSuffix(opts, ";") {
			t.Fatalf("line %d: the options do not end in ';': %q", n+1, line)
		}
		for _, o := range strings.Split(strings.TrimSuffix(opts, ";"), "; ") {
			if !ruleOption.MatchString(o) {
				t.Fatalf("line %d: option %q", n+1, o)
			}
			k, v, _ := strings.Cut(o, ":")
			switch k {
			case "msg":
				r.msg = strings.Trim(v, `"`)
			case "content":
				r.content = strings.Trim(v, `"`)
			case "sid":
				r.sid, _ = strconv.ParseInt(v, 10, 64)
			case "rev":
				r.rev, _ = strconv.ParseInt(v, 10, 64)
			case "metadata":
				r.threat = strings.TrimPrefix(v, "threatd_threat ")
			}
		}
		if r.sid == 0 || r.rev == 0 || r.msg == "" || !strings.Contains(r.msg, "(threat "+r.threat+")") {
			t.Fatalf("line %d lacks a sid, rev or a message naming its threat: %q", n+1, line)
		}
		if (r.proto == "ip") != (r.content == "") {
			t.Fatalf("line %d: an address rule with content, or a domain rule without: %q", n+1, line)
		}
		if _, dup := out[r.sid]; dup {
			t.Fatalf("sid %d twice", r.sid)
		}
		out[r.sid] = r
	}
	return out
}

func report(id string, version int, status core.Status, iocs ...ioc.IOC) core.Threat {
	at := time.Unix(1_700_000_000, 0)
	return core.Threat{ID: id, Status: status, Version: version, VerifiedAt: &at, IOCs: iocs}
}

// Rules per domain (DNS, TLS, HTTP) and per address; sids stable per
// indicator (through removals, re-listings and a restart) and never
// reused; rev moving with the report the rules name, and only then; the
// report named the one with the least id; the ETag moving with the bytes.
func TestSuricataRules(t *testing.T) {
	ctx := context.Background()
	st := &store{threats: []core.Threat{
		report("t1", 1, core.StatusVerified, ind(ioc.Domain, "evil.example", ioc.ConfidenceHigh)),
		report("t2", 1, core.StatusVerified, ind(ioc.IP, "203.0.113.9", ioc.ConfidenceHigh), ind(ioc.URL, "http://c2.bad.example:8080/x", ioc.ConfidenceHigh)),
		report("t0", 4, core.StatusVerified, ind(ioc.Domain, "evil.example", ioc.ConfidenceHigh)),
	}}
	s := NewService(st, "")
	if _, _, err := s.Suricata(ctx); err != ErrFilling {
		t.Fatalf("before the first read: %v", err)
	}
	if err := s.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	rendered, etag, err := s.Suricata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := rendered.Bytes()
	rules := parseRules(t, string(body))
	if len(rules) != 7 || !strings.Contains(string(body), "# threatd Suricata rules: 7 rules (2 domains, 1 address)") {
		t.Fatalf("%d rules:\n%s", len(rules), body)
	}
	sidOf := func(rules map[int64]parsedRule, proto, dest, content string) parsedRule {
		t.Helper()
		for _, r := range rules {
			if r.proto == proto && (r.content == content && proto != "ip" || proto == "ip" && r.dest == dest) {
				return r
			}
		}
		t.Fatalf("no %s rule for %s%s", proto, dest, content)
		return parsedRule{}
	}
	// evil.example is listed by t0 and t1: its rules name t0 (the least id).
	dns := sidOf(rules, "dns", "", ".evil.example")
	if dns.threat != "t0" || !strings.Contains(dns.msg, "DNS query for reported domain evil.example") || dns.rev != 1 {
		t.Errorf("evil.example's DNS rule: %+v", dns)
	}
	if tls, http := sidOf(rules, "tls", "", ".evil.example"), sidOf(rules, "http", "", ".evil.example"); tls.sid != dns.sid+1 || http.sid != dns.sid+2 {
		t.Errorf("evil.example's sids: dns %d tls %d http %d", dns.sid, tls.sid, http.sid)
	}
	ip := sidOf(rules, "ip", "203.0.113.9", "")
	if ip.threat != "t2" || (ip.sid-DefaultSIDBase)%RulesPerDomain != 0 || ip.sid < DefaultSIDBase {
		t.Errorf("the address's rule: %+v", ip)
	}
	c2 := sidOf(rules, "dns", "", ".c2.bad.example")
	if _, again, _ := s.Suricata(ctx); again != etag || st.ruleCalls != 1 {
		t.Errorf("asked again without a change: ETag %s (was %s), %d storage calls", again, etag, st.ruleCalls)
	}

	// t1 revised (it is not the one named): nothing moves. t0 revised: rev 2.
	s.Apply([]core.Threat{report("t1", 2, core.StatusVerified, ind(ioc.Domain, "evil.example", ioc.ConfidenceHigh))})
	if b, _, _ := s.Suricata(ctx); string(b.Bytes()) != string(body) {
		t.Errorf("a revision of a report the rules do not name changed them")
	}
	s.Apply([]core.Threat{report("t0", 5, core.StatusVerified, ind(ioc.Domain, "evil.example", ioc.ConfidenceHigh))})
	body2, etag2, _ := s.Suricata(ctx)
	rules2 := parseRules(t, string(body2.Bytes()))
	if d := rules2[dns.sid]; d.rev != 2 || d.content != ".evil.example" || etag2 == etag {
		t.Errorf("after t0's revision: %+v, ETag %s (was %s)", d, etag2, etag)
	}
	if r := rules2[c2.sid]; r.rev != 1 || r.content != ".c2.bad.example" {
		t.Errorf("another indicator's rule moved: %+v", r)
	}

	// t2 withdrawn: its two indicators leave; a new report gets new sids;
	// t2 verified again gets its old ones back.
	s.Apply([]core.Threat{report("t2", 2, core.StatusRejected)})
	rules3 := parseRules(t, mustRules(t, s))
	if _, ok := rules3[ip.sid]; ok || len(rules3) != 3 {
		t.Fatalf("after t2's withdrawal: %d rules", len(rules3))
	}
	s.Apply([]core.Threat{report("t3", 1, core.StatusVerified, ind(ioc.Domain, "new.example", ioc.ConfidenceHigh))})
	s.Apply([]core.Threat{report("t2", 3, core.StatusVerified, ind(ioc.IP, "203.0.113.9", ioc.ConfidenceHigh), ind(ioc.URL, "http://c2.bad.example:8080/x", ioc.ConfidenceHigh))})
	rules4 := parseRules(t, mustRules(t, s))
	if r := rules4[ip.sid]; r.dest != "203.0.113.9" || r.rev != 2 {
		t.Errorf("the address listed again: %+v (was sid %d)", r, ip.sid)
	}
	if n := sidOf(rules4, "dns", "", ".new.example"); n.sid <= c2.sid || n.sid <= ip.sid || n.sid <= dns.sid {
		t.Errorf("a new indicator's sid %d is not past the others'", n.sid)
	}

	// A restart (a new service on the same store): the same bytes.
	after := mustRules(t, s)
	s2 := NewService(st, "")
	st.threats = []core.Threat{
		report("t0", 5, core.StatusVerified, ind(ioc.Domain, "evil.example", ioc.ConfidenceHigh)),
		report("t1", 2, core.StatusVerified, ind(ioc.Domain, "evil.example", ioc.ConfidenceHigh)),
		report("t2", 3, core.StatusVerified, ind(ioc.IP, "203.0.113.9", ioc.ConfidenceHigh), ind(ioc.URL, "http://c2.bad.example:8080/x", ioc.ConfidenceHigh)),
		report("t3", 1, core.StatusVerified, ind(ioc.Domain, "new.example", ioc.ConfidenceHigh)),
	}
	if err := s2.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	if again := mustRules(t, s2); again != after {
		t.Errorf("after a restart:\n%s\nbefore:\n%s", again, after)
	}

	// Another base moves every sid by the difference.
	s2.SetSIDBase(5_000_000)
	s2.ruleState = ruleState{}
	if shifted := parseRules(t, mustRules(t, s2)); shifted[dns.sid-DefaultSIDBase+5_000_000].content != ".evil.example" {
		t.Errorf("with base 5,000,000: %v", shifted)
	}
}

func mustRules(t *testing.T, s *Service) string {
	t.Helper()
	b, _, err := s.Suricata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return string(b.Bytes())
}

// Suricata itself is not installable here; suricata-update (Debian) is:
// it parses every rule of a file it merges with its own rule parser and
// lists each in its sid-msg map. Every one of 3,000 domains' and 1,000
// addresses' rules must come through, with its message.
func TestSuricataUpdateReadsTheRules(t *testing.T) {
	tool := needTool(t, "suricata-update")
	var rules []Rule
	for i := range 3000 {
		d := fmt.Sprintf("c2-%d.evil%d.example", i, i%13)
		rules = append(rules, Rule{Listed: Listed{Indicator: "domain:" + d, Value: d, Domain: true, ThreatID: fmt.Sprintf("0192f0aa-%04d-7000-8000-000000000001", i), Version: 1}, Number: int64(i + 1), Rev: 1 + i%3})
	}
	for i := range 1000 {
		a := fmt.Sprintf("203.0.%d.%d", i/250, i%250+1)
		if i%2 == 1 {
			a = fmt.Sprintf("2001:db8::%x", i)
		}
		rules = append(rules, Rule{Listed: Listed{Indicator: "ip:" + a, Value: a, ThreatID: "0192f0aa-0000-7000-8000-00000000000b", Version: 2}, Number: int64(3001 + i), Rev: 2})
	}
	var b strings.Builder
	if err := RenderSuricata(&b, rules, DefaultSIDBase); err != nil {
		t.Fatal(err)
	}
	want := parseRules(t, b.String())
	if len(want) != 3000*RulesPerDomain+1000 {
		t.Fatalf("%d rules rendered", len(want))
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	local := write("threatd.rules", b.String())
	none := write("none.rules", "")
	conf := write("update.yaml", "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, "--no-test", "--no-reload", "--suricata-version", "7.0.3", "-D", filepath.Join(dir, "data"),
		"-c", conf, "--suricata-conf", "/dev/null", "--url", "file://"+none, "--local", local, "-o", filepath.Join(dir, "out"),
		"--sid-msg-map-2", filepath.Join(dir, "sid-msg.map"), "--fail").CombinedOutput()
	if err != nil {
		t.Fatalf("suricata-update: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("total: %d; enabled: %d", len(want), len(want))) {
		t.Fatalf("suricata-update did not take every rule:\n%s", out)
	}
	m, err := os.ReadFile(filepath.Join(dir, "sid-msg.map"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(m)), "\n") {
		// gid || sid || rev || classification || priority || msg
		f := strings.Split(line, " || ")
		if len(f) < 6 {
			t.Fatalf("sid-msg map line %q", line)
		}
		sid, _ := strconv.ParseInt(f[1], 10, 64)
		r, ok := want[sid]
		if !ok || f[2] != strconv.FormatInt(r.rev, 10) || f[3] != "trojan-activity" || f[5] != r.msg {
			t.Fatalf("sid-msg map line %q; rendered %+v", line, r)
		}
		seen++
	}
	if seen != len(want) {
		t.Fatalf("the sid-msg map lists %d rules of %d", seen, len(want))
	}
}

// The rules are rendered in runs: after a change only the run the changed
// indicator is in is rendered again (the others are the same bytes as
// before, not copies), and the whole is byte for byte what rendering
// every rule gives, with the ETag a new service (another seed) gives.
func TestSuricataRunsRenderedAgainOnlyWhereChanged(t *testing.T) {
	ctx := context.Background()
	st := &store{}
	for i := range 5000 {
		st.threats = append(st.threats, report(fmt.Sprintf("0192f0aa-0000-7000-8000-%012d", i), 1, core.StatusVerified,
			ind(ioc.Domain, fmt.Sprintf("c2-%05d.runs.example", i), ioc.ConfidenceHigh)))
	}
	st.threats = append(st.threats, report("0192f0aa-0000-7000-8000-999999999999", 1, core.StatusVerified, ind(ioc.IP, "203.0.113.77", ioc.ConfidenceHigh)))
	s := NewService(st, "")
	if err := s.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	first, _, err := s.Suricata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(first.parts); n < 5001/runMax+2 || n > 5001/8 {
		t.Fatalf("%d runs for 5,001 indicators", n)
	}
	// Checked after each change: the bytes and ETag against a rendering of
	// every rule and a new service; the runs not shared with the last.
	check := func(what string, before Rules, fresh int) Rules {
		t.Helper()
		got, etag, err := s.Suricata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listing, _ := s.set.Listing()
		var rules []Rule
		for _, l := range listing {
			id := st.ids[l.Indicator]
			rules = append(rules, Rule{Listed: l, Number: id.Number, Rev: id.Rev})
		}
		var want strings.Builder
		if err := RenderSuricata(&want, rules, DefaultSIDBase); err != nil {
			t.Fatal(err)
		}
		if string(got.Bytes()) != want.String() || got.Len() != want.Len() {
			t.Fatalf("%s: the runs differ from a rendering of every rule", what)
		}
		other := NewService(st, "")
		if err := other.Fill(ctx); err != nil {
			t.Fatal(err)
		}
		if o, etag2, _ := other.Suricata(ctx); etag2 != etag {
			a, b := strings.Split(string(got.Bytes()), "\n"), strings.Split(string(o.Bytes()), "\n")
			for i := range min(len(a), len(b)) {
				if a[i] != b[i] {
					t.Logf("line %d:\n%s\n%s", i, a[i], b[i])
					break
				}
			}
			t.Fatalf("%s: ETag %s, a new service's %s (%d and %d lines)", what, etag, etag2, len(a), len(b))
		}
		old := map[*byte]bool{}
		for _, p := range before.parts[1:] {
			old[&p[0]] = true
		}
		n := 0
		for _, p := range got.parts[1:] {
			if !old[&p[0]] {
				n++
			}
		}
		if n != fresh {
			t.Fatalf("%s: %d runs rendered again, want %d", what, n, fresh)
		}
		return got
	}
	// A new domain in the middle of the rules, a new revision of a named
	// report, a withdrawal: one run each. (The fake store reads its
	// reports in their order: the new one's id sorts last.)
	added := report("0192f0aa-0000-7000-8000-99999999999a", 1, core.StatusVerified, ind(ioc.Domain, "c2-02500x.runs.example", ioc.ConfidenceHigh))
	st.threats = append(st.threats, added)
	s.Apply([]core.Threat{added})
	r := check("a domain added", first, 1)
	st.threats[100] = report(st.threats[100].ID, 2, core.StatusVerified, st.threats[100].IOCs...)
	s.Apply([]core.Threat{st.threats[100]})
	r = check("a report revised", r, 1)
	gone := st.threats[4000]
	st.threats = append(st.threats[:4000], st.threats[4001:]...)
	s.Apply([]core.Threat{report(gone.ID, 2, core.StatusRejected)})
	check("a report withdrawn", r, 1)
}
