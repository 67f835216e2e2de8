package blocklist

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

func ind(typ, value string, conf int) ioc.IOC {
	return ioc.IOC{Type: typ, Value: value, Confidence: conf}
}

// What a report puts on the lists: domains, URL hosts (an address host is
// an address; user-info and port go), addresses; never a low-confidence
// indicator, shared infrastructure, a repository's code host, a local
// address, or a name a resolver cannot hold.
func TestOf(t *testing.T) {
	th := core.Threat{IOCs: []ioc.IOC{
		ind(ioc.Domain, "c2.evil-updates.com", ioc.ConfidenceHigh),
		ind(ioc.Domain, "c2.evil-updates.com", ioc.ConfidenceHigh),
		ind(ioc.URL, "https://user:pw@Drop.Evil-Updates.com:8443/x.sh", ioc.ConfidenceMedium),
		ind(ioc.URL, "http://203.0.113.7:8080/p", ioc.ConfidenceHigh),
		ind(ioc.URL, "http://[2001:db8::1]:80/p", ioc.ConfidenceHigh),
		ind(ioc.URL, "https://cdn.discordapp.com/attachments/1/2/x.exe", ioc.ConfidenceHigh),
		ind(ioc.URL, "https://github.com/evil/repo", ioc.ConfidenceHigh),
		{Type: ioc.URL, Value: "https://code.evil-updates.com/evil/repo", Detail: "repository", Confidence: ioc.ConfidenceHigh},
		ind(ioc.Domain, "pastebin.com", ioc.ConfidenceHigh),
		ind(ioc.Domain, "weak.example.org", ioc.ConfidenceLow),
		ind(ioc.IP, "198.51.100.9", ioc.ConfidenceHigh),
		ind(ioc.IP, "::ffff:198.51.100.10", ioc.ConfidenceHigh),
		ind(ioc.IP, "10.1.2.3", ioc.ConfidenceHigh),
		ind(ioc.IP, "127.0.0.1", ioc.ConfidenceHigh),
		ind(ioc.IP, "fe80::1%eth0", ioc.ConfidenceHigh),
		ind(ioc.Domain, "bad name.com", ioc.ConfidenceHigh),
		ind(ioc.Domain, "-lead.com", ioc.ConfidenceHigh),
		ind(ioc.Domain, "1.2.3.4.5", ioc.ConfidenceHigh),
		ind(ioc.Hash, "d41d8cd98f00b204e9800998ecf8427e", ioc.ConfidenceHigh),
		ind(ioc.Package, "evil-pkg", ioc.ConfidenceHigh),
		// Public suffixes and the reverse tree: a list of *.co.uk answers
		// NXDOMAIN for every name under it.
		ind(ioc.Domain, "co.uk", ioc.ConfidenceHigh),
		ind(ioc.URL, "http://co.uk/x.exe", ioc.ConfidenceHigh),
		ind(ioc.Domain, "in-addr.arpa", ioc.ConfidenceHigh),
		ind(ioc.Domain, "7.113.0.203.in-addr.arpa", ioc.ConfidenceHigh),
		ind(ioc.Domain, "blogspot.com", ioc.ConfidenceHigh),
		ind(ioc.Domain, "evil-pages.blogspot.com", ioc.ConfidenceHigh),
		// Services and resolvers named in passing, even stored at
		// medium confidence by an older version.
		ind(ioc.Domain, "www.google.com", ioc.ConfidenceMedium),
		ind(ioc.URL, "https://api.ipify.org/?format=json", ioc.ConfidenceMedium),
		ind(ioc.IP, "8.8.8.8", ioc.ConfidenceMedium),
		ind(ioc.IP, "2606:4700:4700::1111", ioc.ConfidenceMedium),
		// Special-purpose addresses.
		ind(ioc.IP, "100.100.100.100", ioc.ConfidenceHigh),
		ind(ioc.IP, "100.64.0.1", ioc.ConfidenceHigh),
		ind(ioc.IP, "0.1.2.3", ioc.ConfidenceHigh),
		ind(ioc.IP, "255.255.255.255", ioc.ConfidenceHigh),
		ind(ioc.IP, "198.18.0.1", ioc.ConfidenceHigh),
		ind(ioc.IP, "240.0.0.1", ioc.ConfidenceHigh),
		ind(ioc.IP, "192.0.0.8", ioc.ConfidenceHigh),
		ind(ioc.IP, "2001:db8::5", ioc.ConfidenceHigh),
		ind(ioc.IP, "64:ff9b::7f00:1", ioc.ConfidenceHigh),
		ind(ioc.IP, "64:ff9b::a00:1", ioc.ConfidenceHigh),
		ind(ioc.IP, "64:ff9b:1::1", ioc.ConfidenceHigh),
		ind(ioc.IP, "::", ioc.ConfidenceHigh),
		ind(ioc.IP, "100::1", ioc.ConfidenceHigh),
		ind(ioc.IP, "ff02::1", ioc.ConfidenceHigh),
		ind(ioc.IP, "64:ff9b::cb00:7108", ioc.ConfidenceHigh), // 203.0.113.8 through NAT64: listed
	}}
	h := Of(th)
	if want := []string{"c2.evil-updates.com", "drop.evil-updates.com", "evil-pages.blogspot.com"}; !slices.Equal(h.Domains, want) {
		t.Errorf("domains %q, want %q", h.Domains, want)
	}
	if want := []string{"198.51.100.10", "198.51.100.9", "203.0.113.7", "64:ff9b::cb00:7108"}; !slices.Equal(h.IPs, want) {
		t.Errorf("addresses %q, want %q", h.IPs, want)
	}
	if !Of(core.Threat{IOCs: []ioc.IOC{ind(ioc.Package, "x", ioc.ConfidenceHigh)}}).Empty() {
		t.Error("a package report puts something on the lists")
	}
}

func TestIsName(t *testing.T) {
	for s, want := range map[string]bool{
		"evil.com": true, "a-b.c_d.example": true, "xn--80ak6aa92e.com": true,
		"": false, "com": false, "evil..com": false, "evil.com.": false, "EVIL.com": false, "ev il.com": false,
		"a.-b.com": false, "a.b-.com": false, "1.2.3.4": false, strings.Repeat("a", 64) + ".com": false,
		strings.Repeat("abcdefghi.", 26) + "com": false, strings.Repeat("abcdefghi.", 25) + "com": true, "evil.com\nx CNAME .": false, "evil;.com": false,
	} {
		if got := IsName(s); got != want {
			t.Errorf("IsName(%q) = %v, want %v", s, got, want)
		}
	}
}

// The set counts each name's reports: a name leaves the lists with the
// last report naming it, and the generation moves only when a name or
// address joins or leaves.
func TestSet(t *testing.T) {
	s := NewSet()
	s.Put("a", 1, Hosts{Domains: []string{"b.evil.com", "evil.com"}, IPs: []string{"203.0.113.7"}})
	s.Put("b", 1, Hosts{Domains: []string{"evil.com"}})
	g := s.Generation()
	s.Put("b", 1, Hosts{Domains: []string{"evil.com"}}) // unchanged
	if s.Generation() != g {
		t.Error("an unchanged report moved the generation")
	}
	s.Remove("a")
	d, ips, g2 := s.Snapshot()
	if !slices.Equal(d, []string{"evil.com"}) || len(ips) != 0 || g2 == g {
		t.Fatalf("after a removal: %q %q gen %d (was %d)", d, ips, g2, g)
	}
	s.Put("b", 1, Hosts{})
	if d, ips, _ := s.Snapshot(); len(d)+len(ips) != 0 {
		t.Fatalf("after the last report left: %q %q", d, ips)
	}
	s.Remove("unknown")
	ds := []string{"b.example.com", "example.net", "example.com", "a.example.com", "com.example", "zz.a.example.com"}
	SortDomains(ds)
	if want := []string{"example.com", "a.example.com", "zz.a.example.com", "b.example.com", "com.example", "example.net"}; !slices.Equal(ds, want) {
		t.Errorf("sorted %q, want %q", ds, want)
	}
}

// Every format, byte for byte on a small list.
func TestRender(t *testing.T) {
	domains, ips := []string{"evil.com", "c2.evil.net"}, []string{"203.0.113.7", "2001:db8::1"}
	want := map[string]string{
		RPZ: "; threatd block list (RPZ): 2 domains named by verified reports\n$ORIGIN rpz.threatd.\n$TTL 300\n" +
			"@ IN SOA localhost. hostmaster.localhost. 7 3600 600 604800 300\n@ IN NS localhost.\n" +
			"evil.com CNAME .\n*.evil.com CNAME .\nc2.evil.net CNAME .\n*.c2.evil.net CNAME .\n",
		HostsFile: "# threatd block list (hosts): 2 domains named by verified reports\n0.0.0.0 evil.com\n0.0.0.0 c2.evil.net\n",
		Domains:   "# threatd block list: 2 domains named by verified reports\nevil.com\nc2.evil.net\n",
		Dnsmasq:   "# threatd block list (dnsmasq): 2 domains named by verified reports\naddress=/evil.com/\naddress=/c2.evil.net/\n",
		Unbound: "# threatd block list (Unbound): 2 domains named by verified reports\nserver:\n" +
			"local-zone: \"evil.com.\" always_nxdomain\nlocal-zone: \"c2.evil.net.\" always_nxdomain\n",
		AdGuard: "! Title: threatd block list\n! 2 domains named by verified reports\n||evil.com^\n||c2.evil.net^\n",
		IPs:     "# threatd block list: 2 addresses named by verified reports\n203.0.113.7\n2001:db8::1\n",
	}
	for _, f := range Formats {
		var b bytes.Buffer
		if err := Render(&b, f, domains, ips, Meta{Serial: 7}); err != nil {
			t.Fatal(err)
		}
		if b.String() != want[f] {
			t.Errorf("%s:\n%s\nwant:\n%s", f, b.String(), want[f])
		}
	}
	if err := Render(&bytes.Buffer{}, "bind", nil, nil, Meta{}); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("an unknown format: %v", err)
	}
}

// needTool finds a DNS tool, or skips (fails under CI=true).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (CI requires it: Debian bind9-utils, unbound, suricata-update)", name)
		}
		t.Skipf("%s is not installed: Debian bind9-utils, unbound and suricata-update have it", name)
	}
	return p
}

// The RPZ zone loads in BIND's named-checkzone and the Unbound list in
// unbound-checkconf, with 5,000 names (subdomains of each other too).
func TestRealConsumersLoadTheLists(t *testing.T) {
	checkzone, checkconf := needTool(t, "named-checkzone"), needTool(t, "unbound-checkconf")
	var domains []string
	for i := range 2500 {
		domains = append(domains, fmt.Sprintf("c2-%d.evil-updates.com", i), fmt.Sprintf("x_%d.drop%d.example", i, i%7))
	}
	// 253 bytes, as long as a name is: under the zone's name it is too
	// long for RPZ, which says so in its header.
	long := strings.Repeat("abcdefghi.", 25) + "com"
	domains = append(domains, "evil-updates.com", long)
	SortDomains(domains)
	dir := t.TempDir()
	write := func(format string) string {
		var b bytes.Buffer
		if err := Render(&b, format, domains, nil, Meta{Zone: DefaultZone, Serial: uint32(time.Now().Unix())}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, format)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, checkzone, "-i", "full", strings.TrimSuffix(DefaultZone, "."), write(RPZ)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("named-checkzone: %v\n%s", err, out)
	}
	if rpz, _ := os.ReadFile(filepath.Join(dir, RPZ)); !strings.Contains(string(rpz), "5001 domains") ||
		!strings.Contains(string(rpz), "1 left out: too long under the zone's name") || strings.Contains(string(rpz), long) {
		t.Errorf("the RPZ zone's header: %.300s", rpz)
	}
	conf := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(conf, []byte("include: \""+write(Unbound)+"\"\nserver:\n  chroot: \"\"\n  username: \"\"\n  directory: \""+dir+"\"\n  pidfile: \"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, checkconf, conf).CombinedOutput(); err != nil || !strings.Contains(string(out), "no errors") {
		t.Fatalf("unbound-checkconf: %v\n%s", err, out)
	}
}

// store is a verified reports' table as the service reads it.
type store struct {
	threats []core.Threat
	// during is called after the first page is read (a change the
	// follower applies while the first read goes on).
	during func()
	reads  int
	// RuleIDs' numbers and bases, and how often it was called.
	ids       map[string]*core.RuleID
	bases     map[string]string
	next      int64
	ruleCalls int
}

func (s *store) QueryThreats(_ context.Context, q core.ThreatQuery) ([]core.Threat, error) {
	s.reads++
	if !q.IOCsOnly {
		return nil, fmt.Errorf("the first read asked for whole reports (IOCsOnly false)")
	}
	var out []core.Threat
	for _, t := range s.threats {
		if !q.AfterVerifiedAt.IsZero() && (t.VerifiedAt.Before(q.AfterVerifiedAt) || t.VerifiedAt.Equal(q.AfterVerifiedAt) && t.ID <= q.AfterID) {
			continue
		}
		out = append(out, t)
		if len(out) == q.Limit {
			break
		}
	}
	if s.reads == 1 && s.during != nil {
		s.during()
	}
	return out, nil
}

func (s *store) LastFeedEvent(context.Context, time.Time) (core.FeedEvent, error) {
	return core.FeedEvent{At: time.Unix(1_790_000_000, 0)}, nil
}

func domainReport(i, version int, status core.Status) core.Threat {
	at := time.Unix(1_700_000_000+int64(i), 0)
	name := fmt.Sprintf("c2-%04d.evil.example", i)
	return core.Threat{ID: fmt.Sprintf("%08d", i), Status: status, Version: version, VerifiedAt: &at,
		IOCs: []ioc.IOC{ind(ioc.Domain, name, ioc.ConfidenceHigh)}}
}

// The first read pages through every verified report; a change the
// follower applies meanwhile is not undone by the older copy the first
// read gets later; a list is not served before the read is complete;
// the ETag moves with the content only.
func TestServiceFillAndApply(t *testing.T) {
	st := &store{}
	for i := range 2500 {
		st.threats = append(st.threats, domainReport(i, 1, core.StatusVerified))
	}
	s := NewService(st, "")
	if _, _, err := s.List(context.Background(), Domains); err != ErrFilling {
		t.Fatalf("before the first read: %v", err)
	}
	// While the first page is read, report 2000 (on a later page) is
	// withdrawn and report 10 revised to name nothing.
	st.during = func() {
		w := domainReport(2000, 2, core.StatusRejected)
		r := domainReport(10, 2, core.StatusVerified)
		r.IOCs = nil
		r.ReportType = core.TypePackage
		s.Apply([]core.Threat{w, r})
	}
	if err := s.Fill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st.reads != 2500/fillPage+1 {
		t.Errorf("%d pages read for 2,500 reports, want %d", st.reads, 2500/fillPage+1)
	}
	body, etag, err := s.List(context.Background(), Domains)
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	if strings.Contains(text, "c2-2000.evil.example") || strings.Contains(text, "c2-0010.evil.example") || !strings.Contains(text, "c2-2001.evil.example") ||
		!strings.Contains(text, "2498 domains") {
		t.Fatalf("after the first read: %.200s", text)
	}
	if _, again, _ := s.List(context.Background(), Domains); again != etag {
		t.Error("the ETag moved without a change")
	}
	s.Apply([]core.Threat{domainReport(2000, 3, core.StatusVerified)})
	if body, again, _ := s.List(context.Background(), Domains); again == etag || !strings.Contains(string(body), "c2-2000.evil.example") {
		t.Errorf("after a verification: ETag %s (was %s)", again, etag)
	}
	if rpz, _, _ := s.List(context.Background(), RPZ); !strings.Contains(string(rpz), " 1790000000 3600 ") {
		t.Errorf("the RPZ serial is not the latest published change's time: %.300s", rpz)
	}
}

// Reports offered by another pass over every verified report (the index
// spill's fill) build the lists as Fill's own read does: only verified
// ones, none older than what the change feed applied meanwhile, nothing
// served before Complete, and nothing taken from such a pass after it
// (the change feed keeps the lists from then on).
func TestServiceOfferAndComplete(t *testing.T) {
	s := NewService(&store{}, "")
	s.Apply([]core.Threat{domainReport(3, 2, core.StatusRejected)})
	s.Offer([]core.Threat{domainReport(1, 1, core.StatusVerified), domainReport(2, 1, core.StatusRejected), domainReport(3, 1, core.StatusVerified)})
	s.Offer([]core.Threat{domainReport(1, 1, core.StatusVerified)}) // a batch read again
	if _, _, err := s.List(context.Background(), Domains); err != ErrFilling {
		t.Fatalf("before Complete: %v", err)
	}
	// Reports read, as offered: the batch read again counts again.
	if done, read := s.Filled(); done || read != 2 {
		t.Fatalf("Filled before Complete: %v %d, want false 2", done, read)
	}
	s.Complete()
	s.Offer([]core.Threat{domainReport(4, 1, core.StatusVerified)})
	body, _, err := s.List(context.Background(), Domains)
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	if !strings.Contains(text, "c2-0001.evil.example") || strings.Contains(text, "c2-0002.evil.example") ||
		strings.Contains(text, "c2-0003.evil.example") || strings.Contains(text, "c2-0004.evil.example") || !strings.Contains(text, ": 1 domain named") {
		t.Fatalf("after Complete: %.300s", text)
	}
}
