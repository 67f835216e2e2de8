package siem

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/record"
	"github.com/threatd/threatd/core/webhooks"
)

// envelope is the webhook body (docs/webhooks.md).
type envelope struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// DecisionEvent is a firewall decision as an event: firewall.<action>
// (blocked and warned as the webhooks name them), its webhook body when it
// has one.
func DecisionEvent(d firewall.FirewallDecision) Event {
	kind := d.EventType
	if kind == "" {
		kind = "firewall." + d.Action
	}
	body := d.Event
	if body == nil {
		body, _ = json.Marshal(envelope{Type: kind, Timestamp: d.Time.UTC().Format(time.RFC3339Nano), Data: firewall.ShowDecision(d)})
	}
	severity := ""
	if d.Rule == firewall.RuleMalicious && d.Action != firewall.ActionWaived {
		severity = "high" // a reported version met at the firewall
	}
	return Event{Kind: kind, At: d.Time, Severity: severity,
		Name: fmt.Sprintf("%s %s %s@%s (%s)", d.Action, d.Ecosystem, d.Name, d.Version, d.Rule),
		Ext: labelled([]KV{{"act", d.Action}, {"cs1Label", "rule"}, {"cs1", d.Rule}, {"cs2Label", "ecosystem"}, {"cs2", d.Ecosystem},
			{"cs3Label", "threatIds"}, {"cs3", strings.Join(d.ThreatIDs, ",")}, {"request", d.Purl}, {"suser", d.User}, {"src", d.ClientIP}}),
		JSON: body}
}

// ThreatEvent is a published change of a report as an event:
// threat.verified, threat.revised or threat.withdrawn, with the report's
// public record (and its community signals) as the webhook body.
func ThreatEvent(ev core.FeedEvent, t core.Threat, c core.Community) Event {
	kind := webhooks.EventType(ev.Kind)
	body, _ := json.Marshal(envelope{Type: kind, Timestamp: ev.At.UTC().Format(time.RFC3339Nano), Data: record.Public(t, c)})
	severity := string(t.Details.SeverityLevel)
	return Event{Kind: kind, At: ev.At, Severity: severity,
		Name: fmt.Sprintf("%s %s %s", ev.Kind, t.ReportType, t.ResourceIdentifier),
		Ext: labelled([]KV{{"act", ev.Kind}, {"cs1Label", "threatId"}, {"cs1", t.ID}, {"cs2Label", "reportType"}, {"cs2", string(t.ReportType)},
			{"cs3Label", "ecosystem"}, {"cs3", t.Registry}, {"request", t.ResourceIdentifier}, {"cn1Label", "version"},
			{"cn1", fmt.Sprint(ev.Version)}, {"msg", t.Details.ThreatDescription}}),
		JSON: body}
}

// labelled drops the label of a custom field (csNLabel, cnNLabel) whose
// value is empty, with the value.
func labelled(ext []KV) []KV {
	out := ext[:0:0]
	for i := 0; i < len(ext); i++ {
		if strings.HasSuffix(ext[i].Key, "Label") && i+1 < len(ext) && ext[i+1].Value == "" {
			i++
			continue
		}
		out = append(out, ext[i])
	}
	return out
}

// Service turns events into messages for one receiver.
type Service struct {
	Sender    *Sender
	Format    string
	Version   string
	Community core.Communities
	Log       *slog.Logger

	once     sync.Once
	hostname string
	pid      int
}

// host is the message's HOSTNAME and PROCID, read once.
func (s *Service) host() (string, int) {
	s.once.Do(func() {
		s.hostname, _ = os.Hostname()
		s.pid = os.Getpid()
	})
	return s.hostname, s.pid
}

// ExposureEvent is a report's exposure.found event: its webhook body, the
// number of exposures.
func ExposureEvent(threatID string, total int64, body []byte, at time.Time) Event {
	return Event{Kind: "exposure.found", At: at, Severity: "high",
		Name: fmt.Sprintf("exposure.found %s: %d exposures", threatID, total),
		Ext:  labelled([]KV{{"act", "exposure.found"}, {"cs1Label", "threatId"}, {"cs1", threatID}, {"cn1Label", "exposures"}, {"cn1", fmt.Sprint(total)}}),
		JSON: body}
}

// Exposure sends a report's exposure.found event (never waits).
func (s *Service) Exposure(threatID string, total int64, body []byte, at time.Time) {
	if s == nil {
		return
	}
	s.send(ExposureEvent(threatID, total, body, at))
}

// Decision sends a firewall decision (the recorder's hook: never waits).
func (s *Service) Decision(d firewall.FirewallDecision) {
	if s == nil {
		return
	}
	s.send(DecisionEvent(d))
}

func (s *Service) send(e Event) {
	host, pid := s.host()
	s.Sender.Send(Message(e, s.Format, s.Version, host, pid))
}

// ReportsChanged hears of a batch of the change feed (the follower's
// subscriber): every verification, revision and withdrawal published
// after the daemon started (by any process on the database) is sent, in
// feed order.
func (s *Service) ReportsChanged(b core.ChangeBatch) {
	if s == nil {
		return
	}
	for _, it := range b.Published {
		switch it.Event.Kind {
		case core.ChangeVerified, core.ChangeRevised, core.ChangeWithdrawn:
			s.send(ThreatEvent(it.Event, it.Threat, core.CommunityOf(s.Community, it.Threat)))
		}
	}
}
