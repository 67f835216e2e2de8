package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/exposure"
	"github.com/threatd/threatd/core/firewall"
)

// The webhook event types (docs/webhooks.md): one per kind of published
// change (ChangeVerified, ChangeRevised, ChangeWithdrawn, ChangeDisputed,
// ChangeKept).
const (
	EventVerified  = "threat.verified"
	EventRevised   = "threat.revised"
	EventWithdrawn = "threat.withdrawn"
	EventDisputed  = "threat.disputed"
	EventKept      = "threat.kept"
)

// WebhookEvents are the event types, in the order of their change kinds.
var WebhookEvents = []string{EventVerified, EventRevised, EventWithdrawn, EventDisputed, EventKept}

// EventType names the webhook event of a published change kind.
func EventType(kind string) string {
	if strings.HasPrefix(kind, "firewall.") {
		return kind // the firewall's events are stored by their type
	}
	return "threat." + kind
}

// MaxWebhooks bounds the subscriptions of one service: every published
// change is fanned out to each matching one in the transaction that makes
// it.
const MaxWebhooks = 100

// MaxWebhookURL bounds a subscription's target URL.
const MaxWebhookURL = 2048

// The states of a delivery.
const (
	DeliveryPending   = "pending"   // waiting for its next attempt
	DeliveryDelivered = "delivered" // a 2xx answer
	DeliveryFailed    = "failed"    // still refused when its retry window ended
	DeliveryExpired   = "expired"   // dropped undelivered from a disabled subscription's bounded queue
)

// Webhook is a push subscription: every published change of the kinds in
// Events (about a report of Ecosystem, when set) is delivered to URL,
// signed with Secret.
type Webhook struct {
	ID     string
	URL    string
	Secret string // "whsec_" + base64 of 32 random bytes
	// Events are the change kinds delivered (ChangeVerified, …); never empty.
	Events []string
	// Ecosystem is a package registry (core.RegistryNPM, …); "" = every
	// report, package or not.
	Ecosystem string
	CreatedAt time.Time
	CreatedBy string
	// FailingSince is the first failed attempt since the last delivered
	// one; zero while the target answers.
	FailingSince time.Time
	LastSuccess  time.Time
	// DisabledAt is set when the subscription kept failing for the retry
	// window; DisabledReason says why.
	DisabledAt     time.Time
	DisabledReason string
	// Counts of its deliveries by state (ListWebhooks), and how many
	// undelivered events expired from its queue while disabled.
	Pending, Delivered, Failed, Expired int64
}

// State is "active", "failing" or "disabled".
func (w Webhook) State() string {
	switch {
	case !w.DisabledAt.IsZero():
		return "disabled"
	case !w.FailingSince.IsZero():
		return "failing"
	}
	return "active"
}

// NewWebhook validates a subscription request and returns the subscription
// with a new id and signing secret. events are event types
// ("threat.verified", …) or change kinds; none means all. ecosystem is a
// package registry by its threatd or OSV name ("" = all reports).
// allowPrivate lets the target be a private, loopback or link-local address
// (webhooks.allow_private); a host name is resolved by the caller at
// delivery time, where the same rule is applied again.
func NewWebhook(rawURL string, events []string, ecosystem, createdBy string, now time.Time, allowPrivate bool) (Webhook, error) {
	if err := CheckWebhookURL(rawURL, allowPrivate); err != nil {
		return Webhook{}, err
	}
	w := Webhook{ID: uuid.NewString(), URL: rawURL, CreatedAt: now.UTC().Truncate(time.Microsecond), CreatedBy: createdBy}
	for _, e := range events {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		kind := strings.TrimPrefix(e, "threat.")
		if e == firewall.EventFirewallBlocked || e == firewall.EventFirewallWarned || e == exposure.EventFound {
			kind = e
		} else if !slices.Contains(WebhookEvents, EventType(kind)) {
			return Webhook{}, core.Invalid("events", "unknown event %q: events are %s, %s, %s, %s", e, strings.Join(WebhookEvents, ", "),
				firewall.EventFirewallBlocked, firewall.EventFirewallWarned, exposure.EventFound)
		}
		if !slices.Contains(w.Events, kind) {
			w.Events = append(w.Events, kind)
		}
	}
	if len(w.Events) == 0 {
		w.Events = []string{core.ChangeVerified, core.ChangeRevised, core.ChangeWithdrawn}
	}
	if ecosystem != "" {
		reg, ok := RegistryByName(ecosystem)
		if !ok {
			return Webhook{}, core.Invalid("ecosystem", "must be a package registry (%s) (got %q)", strings.Join(core.PackageRegistries, ", "), ecosystem)
		}
		w.Ecosystem = reg
	}
	var err error
	if w.Secret, err = NewWebhookSecret(); err != nil {
		return Webhook{}, err
	}
	return w, nil
}

// RegistryByName finds a package registry by its threatd name or its OSV
// ecosystem name, in any case.
func RegistryByName(name string) (string, bool) {
	for _, r := range core.PackageRegistries {
		if strings.EqualFold(r, name) || strings.EqualFold(core.OSVEcosystems[r], name) {
			return r, true
		}
	}
	return "", false
}

// CheckWebhookURL validates a target: an absolute http or https URL with a
// host, no user information and no fragment, at most MaxWebhookURL bytes;
// an IP-address host must be public unless allowPrivate.
func CheckWebhookURL(raw string, allowPrivate bool) error {
	if raw == "" {
		return core.Invalid("url", "is required")
	}
	if len(raw) > MaxWebhookURL {
		return core.Invalid("url", "must be at most %d bytes (got %d)", MaxWebhookURL, len(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return core.Invalid("url", "is not a URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return core.Invalid("url", "must be an http or https URL (got scheme %q)", u.Scheme)
	}
	if u.Hostname() == "" {
		return core.Invalid("url", "must name a host")
	}
	if u.User != nil {
		return core.Invalid("url", "must not carry user information: authenticate the deliveries by their signature")
	}
	if u.Fragment != "" || u.Opaque != "" {
		return core.Invalid("url", "must not have a fragment")
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := CheckWebhookAddr(addr, allowPrivate); err != nil {
			return core.Invalid("url", "%v", err)
		}
	} else if !allowPrivate && (strings.EqualFold(u.Hostname(), "localhost") || strings.HasSuffix(strings.ToLower(u.Hostname()), ".localhost")) {
		return core.Invalid("url", "%s is a loopback name; set webhooks.allow_private to deliver to private addresses", u.Hostname())
	}
	return nil
}

// CheckWebhookAddr refuses an address a delivery must not reach unless
// allowPrivate: loopback, private (RFC 1918, unique local), link-local,
// unspecified, multicast, shared (100.64/10) and the other special-purpose
// ranges. The delivery client applies it to the address it connects to, so
// that a name resolving to an internal address (DNS rebinding) is refused
// too.
func CheckWebhookAddr(a netip.Addr, allowPrivate bool) error {
	a = a.Unmap()
	if allowPrivate {
		if a.IsUnspecified() || a.IsMulticast() {
			return fmt.Errorf("%s is not a unicast address", a)
		}
		return nil
	}
	switch {
	case a.IsLoopback():
		return fmt.Errorf("%s is a loopback address; set webhooks.allow_private to deliver to private addresses", a)
	case a.IsPrivate():
		return fmt.Errorf("%s is a private address; set webhooks.allow_private to deliver to private addresses", a)
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return fmt.Errorf("%s is a link-local address; set webhooks.allow_private to deliver to private addresses", a)
	case a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast():
		return fmt.Errorf("%s is not a unicast address", a)
	}
	for _, p := range specialPrefixes {
		if p.Contains(a) {
			return fmt.Errorf("%s is in the special-purpose range %s; set webhooks.allow_private to deliver to it", a, p)
		}
	}
	return nil
}

var specialPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // shared address space (carrier-grade NAT)
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// NewWebhookSecret returns a new signing secret: "whsec_" and the base64 of
// 32 random bytes (the Standard Webhooks form).
func NewWebhookSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}

// SignWebhook returns the Standard Webhooks signature header value of a
// delivery: "v1," and the base64 HMAC-SHA256 of "id.timestamp.body" keyed
// by the secret's bytes (the base64 after "whsec_").
func SignWebhook(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", fmt.Errorf("webhook secret: not base64 after whsec_: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, ts.Unix(), 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// DeliveryID is the webhook-id of a subscription's delivery of the
// published change seq: the same on every attempt, different for each
// subscription and change.
func DeliveryID(webhookID string, seq int64) string {
	ns, err := uuid.Parse(webhookID)
	if err != nil {
		ns = uuid.NewSHA1(uuid.NameSpaceURL, []byte(webhookID))
	}
	return "msg_" + strings.ReplaceAll(uuid.NewSHA1(ns, strconv.AppendInt(nil, seq, 10)).String(), "-", "")
}

// Delivery is one event of a subscription's queue: the published change
// Seq (feed position) of report ThreatID.
type Delivery struct {
	WebhookID string
	Seq       int64
	ThreatID  string
	Kind      string // ChangeVerified, …
	Version   int
	EventAt   time.Time // when the change was published
	State     string
	Attempts  int
	NextAt    time.Time
	// Payload is the body as first sent, kept so that every retry sends
	// the same bytes; nil before the first attempt.
	Payload    []byte
	FinishedAt time.Time
	// Webhook is the subscription (DueDeliveries fills it).
	Webhook Webhook
}

// ID is the delivery's webhook-id.
func (d Delivery) ID() string { return DeliveryID(d.WebhookID, d.Seq) }

// DeliveryAttempt is one attempt to deliver an event, as `threatd webhook
// deliveries` lists it.
type DeliveryAttempt struct {
	WebhookID string
	Seq       int64
	ThreatID  string
	Kind      string
	At        time.Time
	// Status is the HTTP status answered; 0 when none came (Error says why).
	Status  int
	Latency time.Duration
	Error   string
	// State is the delivery's state after this attempt.
	State string
}

// AttemptOutcome is what a delivery attempt changes, applied in one
// transaction (RecordAttempt): the attempt, the delivery's new state (and
// next attempt time while pending), the payload on the first attempt, and
// the subscription's health.
type AttemptOutcome struct {
	Attempt DeliveryAttempt
	NextAt  time.Time // while pending
	Payload []byte    // set on the first attempt
	// Disable, when set, disables the subscription with this reason.
	Disable string
}

// WebhookQueue is the size of the delivery queue, for metrics.
type WebhookQueue struct {
	Pending int64
	Oldest  time.Time // the oldest pending event's time; zero when none
}

// RetryPolicy is when a failed delivery is tried again: exponential backoff
// from Base, capped at Max, with ±50 % jitter, for Window after the event;
// a subscription failing for Window is disabled.
type RetryPolicy struct {
	Base, Max, Window time.Duration
}

// Next returns the time of the attempt after the n-th failed one (n ≥ 1).
func (p RetryPolicy) Next(now time.Time, n int) time.Time {
	d := float64(p.Base) * math.Pow(2, float64(min(n-1, 40)))
	if d > float64(p.Max) {
		d = float64(p.Max)
	}
	d *= 0.5 + mrand.Float64()
	return now.Add(time.Duration(d))
}

// WebhookStore keeps push subscriptions and their delivery queues. The
// events themselves are written by the store with the change that causes
// them: every published change (Feed) is queued for each subscription that
// wants it in the same transaction.
type WebhookStore interface {
	// CreateWebhook stores a subscription; ErrLimit beyond MaxWebhooks.
	CreateWebhook(ctx context.Context, w Webhook) error
	// ListWebhooks returns every subscription with its delivery counts,
	// oldest first.
	ListWebhooks(ctx context.Context) ([]Webhook, error)
	// DeleteWebhook removes a subscription and its queue; ErrNotFound when
	// there is none with that id.
	DeleteWebhook(ctx context.Context, id string) error
	// EnableWebhook enables a disabled subscription again: its pending
	// events are delivered from the next attempt on; ErrNotFound when
	// there is none with that id.
	EnableWebhook(ctx context.Context, id string) (Webhook, error)
	// DueDeliveries returns up to q.Limit (1..MaxPage, else ErrInvalid)
	// pending deliveries of enabled subscriptions due at q.Now, the most
	// overdue first, each with its subscription.
	DueDeliveries(ctx context.Context, q DueQuery) ([]Delivery, error)
	// RecordAttempt applies the outcome of one delivery attempt.
	RecordAttempt(ctx context.Context, o AttemptOutcome) error
	// WebhookAttempts returns up to q.Limit (1..MaxPage, else ErrInvalid)
	// delivery attempts of the subscription q.WebhookID, newest first;
	// ErrNotFound when there is no such subscription.
	WebhookAttempts(ctx context.Context, q AttemptQuery) ([]DeliveryAttempt, error)
	// WebhookQueue counts the pending deliveries.
	WebhookQueue(ctx context.Context) (WebhookQueue, error)
	// TrimWebhooks bounds the queues: the oldest pending events of disabled
	// subscriptions beyond t.MaxPending each expire (counted on the
	// subscription), and finished deliveries (with their attempts) older
	// than t.FinishedBefore are deleted. It returns how many expired.
	TrimWebhooks(ctx context.Context, t WebhookTrim) (int64, error)
}

// DueQuery is one batch of the deliveries due at Now
// (WebhookStore.DueDeliveries).
type DueQuery struct {
	Now   time.Time
	Limit int
	// Except are subscriptions whose deliveries are left out (those the
	// dispatcher is busy with), so that one slow subscription's queue
	// cannot fill every batch.
	Except []string
}

// AttemptQuery is the latest delivery attempts of one subscription
// (WebhookStore.WebhookAttempts).
type AttemptQuery struct {
	WebhookID string
	Limit     int
}

// WebhookTrim bounds the delivery queues (WebhookStore.TrimWebhooks).
type WebhookTrim struct {
	MaxPending     int
	FinishedBefore time.Time
}

// WebhookURLForLog is a target URL as logs may show it: its scheme and
// host only. The path and query of a target often are its secret (Slack
// and Teams incoming-webhook URLs), and logs travel further than the
// database.
func WebhookURLForLog(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(not a URL)"
	}
	out := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		out += "/…"
	}
	return out
}
