package storage

import (
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/exposure"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/webhooks"
)

type webhookRow struct {
	bun.BaseModel `bun:"table:webhooks"`

	ID             string     `bun:"id,pk"`
	URL            string     `bun:"url,notnull"`
	Secret         string     `bun:"secret,notnull"`
	OnVerified     bool       `bun:"on_verified,notnull"`
	OnRevised      bool       `bun:"on_revised,notnull"`
	OnWithdrawn    bool       `bun:"on_withdrawn,notnull"`
	OnDisputed     bool       `bun:"on_disputed,notnull"`
	OnKept         bool       `bun:"on_kept,notnull"`
	OnFwBlocked    bool       `bun:"on_firewall_blocked,notnull"`
	OnFwWarned     bool       `bun:"on_firewall_warned,notnull"`
	OnExposure     bool       `bun:"on_exposure_found,notnull"`
	Ecosystem      *string    `bun:"ecosystem"`
	CreatedAt      time.Time  `bun:"created_at,notnull"`
	CreatedBy      string     `bun:"created_by,notnull"`
	FailingSince   *time.Time `bun:"failing_since"`
	LastSuccessAt  *time.Time `bun:"last_success_at"`
	DisabledAt     *time.Time `bun:"disabled_at"`
	DisabledReason *string    `bun:"disabled_reason"`
	Expired        int64      `bun:"expired,notnull"`
}

func webhookToRow(w webhooks.Webhook) webhookRow {
	return webhookRow{
		ID: w.ID, URL: w.URL, Secret: w.Secret,
		OnVerified:  slices.Contains(w.Events, core.ChangeVerified),
		OnRevised:   slices.Contains(w.Events, core.ChangeRevised),
		OnWithdrawn: slices.Contains(w.Events, core.ChangeWithdrawn),
		OnDisputed:  slices.Contains(w.Events, core.ChangeDisputed),
		OnKept:      slices.Contains(w.Events, core.ChangeKept),
		OnFwBlocked: slices.Contains(w.Events, firewall.EventFirewallBlocked),
		OnFwWarned:  slices.Contains(w.Events, firewall.EventFirewallWarned),
		OnExposure:  slices.Contains(w.Events, exposure.EventFound),
		Ecosystem:   optString(w.Ecosystem), CreatedAt: w.CreatedAt.UTC(), CreatedBy: w.CreatedBy,
		FailingSince: optTime(w.FailingSince), LastSuccessAt: optTime(w.LastSuccess),
		DisabledAt: optTime(w.DisabledAt), DisabledReason: optString(w.DisabledReason), Expired: w.Expired,
	}
}

func (r webhookRow) domain() webhooks.Webhook {
	w := webhooks.Webhook{ID: r.ID, URL: r.URL, Secret: r.Secret, CreatedAt: r.CreatedAt.UTC(), CreatedBy: r.CreatedBy, Expired: r.Expired}
	for kind, on := range map[string]bool{core.ChangeVerified: r.OnVerified, core.ChangeRevised: r.OnRevised, core.ChangeWithdrawn: r.OnWithdrawn,
		core.ChangeDisputed: r.OnDisputed, core.ChangeKept: r.OnKept} {
		if on {
			w.Events = append(w.Events, kind)
		}
	}
	slices.SortFunc(w.Events, func(a, b string) int {
		return slices.Index(webhooks.WebhookEvents, webhooks.EventType(a)) - slices.Index(webhooks.WebhookEvents, webhooks.EventType(b))
	})
	if r.OnFwBlocked {
		w.Events = append(w.Events, firewall.EventFirewallBlocked)
	}
	if r.OnFwWarned {
		w.Events = append(w.Events, firewall.EventFirewallWarned)
	}
	if r.OnExposure {
		w.Events = append(w.Events, exposure.EventFound)
	}
	w.Ecosystem = deref(r.Ecosystem)
	w.DisabledReason = deref(r.DisabledReason)
	w.FailingSince, w.LastSuccess, w.DisabledAt = timeOf(r.FailingSince), timeOf(r.LastSuccessAt), timeOf(r.DisabledAt)
	return w
}

type deliveryRow struct {
	bun.BaseModel `bun:"table:webhook_deliveries"`

	WebhookID  string     `bun:"webhook_id,pk"`
	Seq        int64      `bun:"seq,pk"`
	ThreatID   string     `bun:"threat_id,notnull"`
	Kind       string     `bun:"kind,notnull"`
	Version    int        `bun:"version,notnull"`
	EventAt    time.Time  `bun:"event_at,notnull"`
	State      string     `bun:"state,notnull"`
	Attempts   int        `bun:"attempts,notnull"`
	NextAt     time.Time  `bun:"next_at,notnull"`
	FinishedAt *time.Time `bun:"finished_at"`
}

type payloadRow struct {
	bun.BaseModel `bun:"table:webhook_payloads"`

	Seq     int64  `bun:"seq,pk"`
	Payload string `bun:"payload,notnull"`
}

func (r deliveryRow) domain() webhooks.Delivery {
	return webhooks.Delivery{WebhookID: r.WebhookID, Seq: r.Seq, ThreatID: r.ThreatID, Kind: r.Kind, Version: r.Version,
		EventAt: r.EventAt.UTC(), State: r.State, Attempts: r.Attempts, NextAt: r.NextAt.UTC(), FinishedAt: timeOf(r.FinishedAt)}
}

type attemptRow struct {
	bun.BaseModel `bun:"table:webhook_attempts"`

	ID        int64     `bun:"id,pk,autoincrement"`
	WebhookID string    `bun:"webhook_id,notnull"`
	Seq       int64     `bun:"seq,notnull"`
	At        time.Time `bun:"at,notnull"`
	Status    int       `bun:"status,notnull"`
	LatencyUS int64     `bun:"latency_us,notnull"`
	Error     *string   `bun:"error"`
	State     string    `bun:"state,notnull"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
