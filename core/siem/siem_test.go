package siem

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// CEF: the header's pipes and backslashes escaped, the extension's
// equals signs, backslashes and line breaks; severities by the report's.
func TestCEF(t *testing.T) {
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	e := Event{Kind: "threat.verified", At: at, Severity: "high", Name: `verified a|b\c`,
		Ext: []KV{{"act", "verified"}, {"msg", "x=1\\2\nline\r"}, {"suser", ""}}}
	got := CEF(e, "1.2|3")
	want := `CEF:0|threatd|threatd|1.2\|3|threat.verified|verified a\|b\\c|8|rt=1795680000000 act=verified msg=x\=1\\2\nline\r`
	if got != want {
		t.Errorf("CEF:\n%s\nwant\n%s", got, want)
	}
	for sev, want := range map[string]int{"critical": 10, "high": 8, "medium": 5, "low": 3, "": 1} {
		if CEFSeverity(sev) != want {
			t.Errorf("severity %q: %d", sev, CEFSeverity(sev))
		}
	}
	msg := string(Message(e, FormatCEF, "1.0", "host name", 42))
	if !strings.HasPrefix(msg, "<131>1 2026-11-26T08:00:00.000000Z hostname threatd 42 threat.verified - CEF:0|") {
		t.Errorf("RFC 5424: %s", msg)
	}
	e.JSON = []byte(`{"type":"threat.verified"}`)
	if msg := string(Message(e, FormatJSON, "1.0", "h", 1)); !strings.HasSuffix(msg, ` - {"type":"threat.verified"}`) {
		t.Errorf("JSON: %s", msg)
	}
}

func TestParseAddress(t *testing.T) {
	for in, ok := range map[string]bool{"udp://127.0.0.1:514": true, "tcp://siem.example.com:6514": true, "tls://[::1]:6514": true,
		"http://x:1": false, "tcp://x": false, "tcp://x:0": false, "tcp://x:70000": false, "x:514": false, "tcp://u@x:1": false, "tcp://x:1/p": false} {
		if _, _, err := ParseAddress(in); (err == nil) != ok {
			t.Errorf("ParseAddress(%q): %v", in, err)
		}
	}
}

// Over TCP each message is octet-counted, in order; a receiver that is
// down holds nothing: messages queue, the excess is dropped and counted,
// and the queued ones arrive once it is up.
func TestSenderTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // down at first
	s, err := NewSender("tcp://"+addr, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	start := time.Now()
	for i := range QueueMax + 500 {
		s.Send([]byte("<134>1 - - threatd - test - message " + strconv.Itoa(i)))
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("sending to a receiver that is down took %s", took)
	}
	_, dropped := s.Counts()
	if dropped < 499 || dropped > 501 {
		t.Fatalf("%d dropped, want about 500 (the queue holds %d)", dropped, QueueMax)
	}
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer l.Close()
	conn, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	prev := -1
	for got := 0; ; got++ {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := r.ReadString(' ')
		if err != nil {
			if got < QueueMax-1 {
				t.Fatalf("after %d messages: %v", got, err)
			}
			break
		}
		size, _ := strconv.Atoi(strings.TrimSpace(n))
		msg := make([]byte, size)
		if _, err := io.ReadFull(r, msg); err != nil {
			t.Fatal(err)
		}
		i, _ := strconv.Atoi(string(msg[strings.LastIndexByte(string(msg), ' ')+1:]))
		if i <= prev {
			t.Fatalf("message %d after %d", i, prev)
		}
		prev = i
		if sent, _ := s.Counts(); got >= QueueMax-2 && sent >= int64(QueueMax-1) {
			break
		}
	}
}

// A decision and a published change as events.
func TestEvents(t *testing.T) {
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	d := firewall.FirewallDecision{Time: at, Ecosystem: "npm", Name: "evil", Version: "1.0.0", Purl: "pkg:npm/evil@1.0.0", Rule: firewall.RuleMalicious,
		Action: firewall.ActionBlock, ThreatIDs: []string{"t1", "t2"}, User: "ci@example.com", ClientIP: "192.0.2.1", EventType: firewall.EventFirewallBlocked,
		Event: []byte(`{"type":"firewall.blocked"}`)}
	e := DecisionEvent(d)
	cef := CEF(e, "1")
	for _, want := range []string{"|firewall.blocked|block npm evil@1.0.0 (malicious)|8|", "act=block", "cs3=t1,t2", "request=pkg:npm/evil@1.0.0", "src=192.0.2.1"} {
		if !strings.Contains(cef, want) {
			t.Errorf("decision CEF lacks %q: %s", want, cef)
		}
	}
	if string(e.JSON) != `{"type":"firewall.blocked"}` {
		t.Errorf("decision JSON: %s", e.JSON)
	}
	mon := DecisionEvent(firewall.FirewallDecision{Time: at, Ecosystem: "npm", Name: "new", Version: "2.0.0", Rule: "install_scripts", Action: firewall.ActionMonitor})
	if mon.Kind != "firewall.monitor" || !strings.Contains(string(mon.JSON), `"action":"monitor"`) || CEFSeverity(mon.Severity) != 1 {
		t.Errorf("a monitored version: %+v %s", mon, mon.JSON)
	}
	th := core.Threat{ID: "t1", ReportType: core.TypeDomain, ResourceIdentifier: "c2.example", Details: core.Details{SeverityLevel: core.SeverityCritical, ThreatDescription: "C2 = bad"}}
	te := ThreatEvent(core.FeedEvent{At: at, Kind: core.ChangeWithdrawn, Version: 3}, th, core.Community{})
	cef = CEF(te, "1")
	for _, want := range []string{"|threat.withdrawn|withdrawn domain c2.example|10|", "cs1=t1", "cn1=3", `msg=C2 \= bad`} {
		if !strings.Contains(cef, want) {
			t.Errorf("threat CEF lacks %q: %s", want, cef)
		}
	}
	if !strings.Contains(string(te.JSON), `"type":"threat.withdrawn"`) || !strings.Contains(string(te.JSON), `"resource_identifier":"c2.example"`) {
		t.Errorf("threat JSON: %s", te.JSON)
	}
}

// A report with a 20,000-character description and payload makes a
// message of at most MaxMessage bytes, in either format: its longest
// texts cut with the marker, the message still valid JSON or CEF.
func TestLongMessagesBounded(t *testing.T) {
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	long := strings.Repeat("Steals tokens é ", 1250) // 20,000 bytes, multi-byte characters
	th := core.Threat{ID: "t1", ReportType: core.TypePackage, ResourceIdentifier: "evil", Registry: "npm",
		Details: core.Details{SeverityLevel: core.SeverityHigh, ThreatDescription: long, PayloadDescription: long}}
	e := ThreatEvent(core.FeedEvent{At: at, Kind: core.ChangeVerified, Version: 1}, th, core.Community{})
	for _, format := range []string{FormatJSON, FormatCEF} {
		msg := Message(e, format, "1.0", "host", 7)
		if len(msg) > MaxMessage || !utf8.Valid(msg) || !strings.Contains(string(msg), "…[truncated by threatd: ") {
			t.Fatalf("%s: %d bytes (at most %d), valid UTF-8 %v:\n%.300s", format, len(msg), MaxMessage, utf8.Valid(msg), msg)
		}
		body := string(msg)[strings.Index(string(msg), " - ")+3:]
		if format == FormatJSON {
			var v struct {
				Type string
				Data map[string]any
			}
			if err := json.Unmarshal([]byte(body), &v); err != nil || v.Type != "threat.verified" || v.Data["resource_identifier"] != "evil" {
				t.Fatalf("the bounded JSON: %v %+v", err, v)
			}
		} else if !strings.HasPrefix(body, "CEF:0|threatd|threatd|1.0|threat.verified|") || !strings.Contains(body, "cs1=t1") {
			t.Fatalf("the bounded CEF: %.300s", body)
		}
	}
	short := ThreatEvent(core.FeedEvent{At: at, Kind: core.ChangeVerified, Version: 1}, core.Threat{ID: "t2", ReportType: core.TypeDomain, ResourceIdentifier: "c2.example"}, core.Community{})
	if msg := Message(short, FormatJSON, "1.0", "host", 7); strings.Contains(string(msg), "truncated") || !strings.HasSuffix(string(msg), string(short.JSON)) {
		t.Fatalf("a short message is cut: %s", msg)
	}
}

// The follower's batches: the verifications, revisions and withdrawals are
// sent (not a dispute), in order, while firewall decisions are sent from
// other goroutines.
func TestServiceReportsChanged(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := NewSender("tcp://"+l.Addr().String(), nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	th := core.Threat{ID: "t1", ReportType: core.TypeDomain, ResourceIdentifier: "c2.example"}
	var items []core.FeedItem
	for i, kind := range []string{core.ChangeVerified, core.ChangeDisputed, core.ChangeRevised, core.ChangeWithdrawn} {
		items = append(items, core.FeedItem{Event: core.FeedEvent{Seq: int64(i + 1), At: at.Add(time.Duration(i) * time.Millisecond), Kind: kind, ThreatID: "t1"}, Threat: th})
	}
	svc := &Service{Sender: s, Format: FormatCEF, Version: "1", Log: quiet}
	go func() {
		svc.ReportsChanged(core.ChangeBatch{Changed: []string{"t1"}})
		svc.ReportsChanged(core.ChangeBatch{Published: items[:2]})
		svc.ReportsChanged(core.ChangeBatch{Published: items[2:]})
	}()
	for range 3 {
		go svc.Decision(firewall.FirewallDecision{Time: at, Ecosystem: "npm", Name: "x", Version: "1", Rule: firewall.RuleMalicious, Action: firewall.ActionBlock})
	}
	conn, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	var kinds []string
	for len(kinds) < 6 {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := r.ReadString(' ')
		if err != nil {
			t.Fatalf("after %v: %v", kinds, err)
		}
		size, _ := strconv.Atoi(strings.TrimSpace(n))
		msg := make([]byte, size)
		if _, err := io.ReadFull(r, msg); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, strings.Fields(string(msg))[5])
	}
	var threats []string
	for _, k := range kinds {
		if strings.HasPrefix(k, "threat.") {
			threats = append(threats, k)
		}
	}
	if strings.Join(threats, " ") != "threat.verified threat.revised threat.withdrawn" {
		t.Errorf("the changes sent: %v (all: %v)", threats, kinds)
	}
}
