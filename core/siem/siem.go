// Package siem sends threatd's events to a SIEM as syslog messages
// (docs/siem.md): every firewall decision, and every verification,
// revision and withdrawal the change feed publishes, as RFC 5424 messages
// over UDP, TCP (octet-counted, RFC 6587) or TLS (RFC 5425), each in CEF
// or as the webhook body. A receiver that is down never holds a request:
// messages wait in a bounded queue, the ones it cannot take are counted
// as dropped, and the connection is tried again.
package siem

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Formats of a message.
const (
	FormatCEF  = "cef"
	FormatJSON = "json"
)

// Event is one thing that happened, in the terms a message carries.
type Event struct {
	// Kind is the event's type: firewall.blocked and firewall.warned (as
	// webhooks name them), firewall.monitor, firewall.waived,
	// threat.verified, threat.revised, threat.withdrawn.
	Kind string
	At   time.Time
	// Severity is the report's (critical, high, medium, low; "" none).
	Severity string
	// Name is a line a person reads.
	Name string
	// Ext are the CEF extension's keys and values, in order.
	Ext []KV
	// JSON is the event's webhook body (the JSON format's message).
	JSON []byte
}

// KV is one CEF extension field.
type KV struct{ Key, Value string }

// CEFSeverity is CEF's 0–10 severity of a report's severity.
func CEFSeverity(severity string) int {
	switch severity {
	case "critical":
		return 10
	case "high":
		return 8
	case "medium":
		return 5
	case "low":
		return 3
	}
	return 1
}

// syslogSeverity is RFC 5424's severity of a report's severity.
func syslogSeverity(severity string) int {
	switch severity {
	case "critical":
		return 2 // critical
	case "high":
		return 3 // error
	case "medium":
		return 4 // warning
	case "low":
		return 5 // notice
	}
	return 6 // informational
}

// Facility is the syslog facility of every message: local0.
const Facility = 16

// CEF is the event as a CEF line: version 0, vendor and product threatd,
// the version threatd version prints, the kind as signature id.
func CEF(e Event, version string) string {
	var b strings.Builder
	b.WriteString("CEF:0|threatd|threatd|")
	b.WriteString(cefHeader(version))
	b.WriteByte('|')
	b.WriteString(cefHeader(e.Kind))
	b.WriteByte('|')
	b.WriteString(cefHeader(e.Name))
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(CEFSeverity(e.Severity)))
	b.WriteByte('|')
	b.WriteString("rt=")
	b.WriteString(strconv.FormatInt(e.At.UnixMilli(), 10))
	for _, kv := range e.Ext {
		if kv.Value == "" {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(kv.Key)
		b.WriteByte('=')
		b.WriteString(cefValue(kv.Value))
	}
	return b.String()
}

// cefHeader escapes a header field: backslash and pipe; a line break
// becomes a space (a header is one line).
func cefHeader(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '|':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n', '\r':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cefValue escapes an extension value: backslash and equals sign, and
// line breaks as \n and \r.
func cefValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '=':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Message is the event as an RFC 5424 syslog message (without framing):
// <PRI>1 TIMESTAMP HOSTNAME threatd PROCID MSGID - MSG, the MSGID its
// kind and the MSG in format.
//
// A message is at most MaxMessage bytes: an event's longest texts are cut
// (marked) to fit.
func Message(e Event, format, version, hostname string, pid int) []byte {
	pri := Facility*8 + syslogSeverity(e.Severity)
	host := printable(hostname, 255)
	if host == "" {
		host = "-"
	}
	head := fmt.Appendf(nil, "<%d>1 %s %s threatd %d %s - ", pri, e.At.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), host, pid,
		printable(e.Kind, 32))
	room := MaxMessage - len(head)
	if format == FormatJSON {
		return append(head, boundJSON(e.JSON, room)...)
	}
	return append(head, boundCEF(e, version, room)...)
}

// printable keeps a header field to printable US-ASCII without spaces, at
// most n bytes ("-" for nothing).
func printable(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < n; i++ {
		if c := s[i]; c > 32 && c < 127 {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}
