// Package delivery delivers webhooks (docs/webhooks.md): the published
// changes the store queued for each subscription, POSTed as Standard
// Webhooks messages, signed, retried with backoff until a 2xx answer or the
// end of the retry window. The subscriptions themselves are the use case
// core/webhooks. One daemon at a time delivers (a lease in storage), so
// daemons sharing a database do not send an event twice in the normal case;
// an event is delivered at least once.
package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/core/record"
	"github.com/threatd/threatd/core/webhooks"
)

// LeaseName is the storage lease the delivering daemon holds.
const LeaseName = "webhooks"

// batch is the deliveries read at once.
const batch = 100

// maxErrorText bounds the answer text kept with a failed attempt.
const maxErrorText = 300

// Observer receives the delivery metrics.
type Observer interface {
	// Delivery counts one attempt by outcome: delivered, retry (failed,
	// to be tried again), failed (failed at the end of its window).
	Delivery(outcome string, took time.Duration)
	// Expired counts events dropped from disabled subscriptions' queues.
	Expired(n int64)
	// Queue sets the queue gauges.
	Queue(q webhooks.WebhookQueue)
}

// Dispatcher runs the delivery loop of a daemon.
type Dispatcher struct {
	Store port.Store
	// Community says what the community says of a report as its event is
	// delivered (nil: nothing).
	Community core.Communities
	Policy    webhooks.RetryPolicy
	// Timeout bounds one attempt: connection, TLS, request and answer.
	Timeout      time.Duration
	AllowPrivate bool
	// MaxPending bounds a disabled subscription's queue; KeepFinished is
	// how long finished deliveries stay listed.
	MaxPending   int
	KeepFinished time.Duration
	// Poll is the time between two reads of the queue when it is empty.
	Poll        time.Duration
	Concurrency int
	Holder      string
	UserAgent   string
	Log         *slog.Logger
	Observer    Observer
	// Client sends the deliveries; nil = NewClient(Timeout, AllowPrivate, nil).
	Client *http.Client

	once sync.Once
}

func (d *Dispatcher) init() {
	d.once.Do(func() {
		if d.Client == nil {
			d.Client = NewClient(d.Timeout, d.AllowPrivate, nil)
		}
		if d.Concurrency < 1 {
			d.Concurrency = 8
		}
		if d.Poll <= 0 {
			d.Poll = time.Second
		}
	})
}

// NewClient returns the HTTP client of deliveries: no proxy, no redirects
// (a 3xx answer is a failed attempt), a timeout per attempt, and a dialer
// that refuses private, loopback and link-local addresses at connect time
// unless allowPrivate, so that a target name resolving to one (DNS
// rebinding) is refused too. base, when set, is cloned for its TLS
// settings.
func NewClient(timeout time.Duration, allowPrivate bool, base *http.Transport) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("webhook target address %q: %w", address, err)
		}
		if err := webhooks.CheckWebhookAddr(ap.Addr(), allowPrivate); err != nil {
			return fmt.Errorf("refused: %w", err)
		}
		return nil
	}}
	var tr *http.Transport
	if base != nil {
		tr = base.Clone()
	} else {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	tr.Proxy = nil
	tr.DialContext = dialer.DialContext
	tr.MaxIdleConnsPerHost = 8
	tr.ResponseHeaderTimeout = timeout
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// perSubscription bounds the attempts made at once to one subscription:
// a slow receiver holds at most this many of the dispatcher's
// Concurrency, and every other subscription is delivered beside it.
const perSubscription = 2

// Run delivers until ctx ends. Every daemon runs it; only the lease holder
// delivers. Attempts run in the background: each subscription has at
// most perSubscription of them at once and all together at most
// Concurrency, and a finished attempt makes room for the next at once, so
// that one slow or dead receiver never holds up the others' events.
func (d *Dispatcher) Run(ctx context.Context) {
	d.init()
	// The holder renews the lease at every turn of the loop (at least
	// every Poll) while attempts run; another daemon takes over ttl after
	// the holder stops (killed or cut off).
	ttl := max(5*time.Second, 10*d.Poll)
	trimEvery := min(time.Minute, 10*d.Poll)
	var lastTrim, lastGauge, leased time.Time
	held := false
	l := &lanes{busy: map[string]int{}, inFlight: map[delivery]bool{}, finished: map[delivery]time.Time{}, freed: make(chan struct{}, 1)}
	defer l.wg.Wait()
	for ctx.Err() == nil {
		if !held || time.Since(leased) >= ttl/3 {
			at := time.Now()
			var err error
			held, err = d.Store.Lease(ctx, core.LeaseClaim{Name: LeaseName, Holder: d.Holder, TTL: ttl})
			if err != nil && ctx.Err() == nil {
				d.Log.Warn("webhooks: lease failed; will retry", "error", err.Error())
			}
			if held {
				leased = at
			}
		}
		if held {
			now := time.Now()
			if now.Sub(lastGauge) >= min(5*time.Second, 5*d.Poll) {
				d.gauges(ctx)
				lastGauge = now
			}
			if now.Sub(lastTrim) >= trimEvery {
				d.trim(ctx)
				lastTrim = now
			}
			d.dispatch(ctx, l)
		}
		select {
		case <-ctx.Done():
		case <-time.After(d.Poll):
		case <-l.freed:
		}
	}
}

// lanes are the attempts in flight, by subscription and by delivery, and
// the due deliveries read but not started yet.
type lanes struct {
	mu       sync.Mutex
	busy     map[string]int // attempts in flight per subscription
	inFlight map[delivery]bool
	total    int
	wg       sync.WaitGroup
	// freed is signalled when an attempt ends: there is room again.
	freed chan struct{}
	// read are due deliveries read at readAt and not started for want of
	// room; started from before the queue is read again (within a Poll).
	read   []webhooks.Delivery
	readAt time.Time
	// finished are deliveries whose attempt ended, and when: a read that
	// began before then may still list one as due, and it must not be
	// sent again on that read's word. Dropped once a read began after.
	finished map[delivery]time.Time
}

// delivery names one delivery: a subscription and an event.
type delivery struct {
	webhook string
	seq     int64
}

// dispatch starts attempts for the due deliveries while there is room:
// first those read earlier, then, when none of them can start, a new read
// that leaves out the subscriptions with no room left.
func (d *Dispatcher) dispatch(ctx context.Context, l *lanes) {
	l.mu.Lock()
	if time.Since(l.readAt) < d.Poll && d.start(ctx, l) {
		l.mu.Unlock()
		return
	}
	room := d.Concurrency - l.total
	var full []string
	for id, n := range l.busy {
		if n >= perSubscription {
			full = append(full, id)
		}
	}
	l.mu.Unlock()
	if room <= 0 || len(full) > core.MaxPage {
		return
	}
	at := time.Now()
	due, err := d.Store.DueDeliveries(ctx, webhooks.DueQuery{Now: at, Limit: batch, Except: full})
	if err != nil {
		if ctx.Err() == nil {
			d.Log.Warn("webhooks: reading the queue failed", "error", err.Error())
		}
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.read, l.readAt = due, at
	for k, f := range l.finished {
		if f.Before(at) {
			delete(l.finished, k)
		}
	}
	d.start(ctx, l)
}

// start begins the attempts of l.read that have room, dropping them from
// it; it reports whether one began. l.mu is held.
func (d *Dispatcher) start(ctx context.Context, l *lanes) bool {
	started := false
	rest := l.read[:0]
	for _, dl := range l.read {
		k := delivery{dl.WebhookID, dl.Seq}
		if f, ok := l.finished[k]; l.inFlight[k] || ok && !f.Before(l.readAt) {
			continue
		}
		if l.total >= d.Concurrency || l.busy[dl.WebhookID] >= perSubscription {
			rest = append(rest, dl)
			continue
		}
		started = true
		l.inFlight[delivery{dl.WebhookID, dl.Seq}] = true
		l.busy[dl.WebhookID]++
		l.total++
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			d.attempt(ctx, dl)
			l.mu.Lock()
			delete(l.inFlight, delivery{dl.WebhookID, dl.Seq})
			l.finished[delivery{dl.WebhookID, dl.Seq}] = time.Now()
			if l.busy[dl.WebhookID]--; l.busy[dl.WebhookID] <= 0 {
				delete(l.busy, dl.WebhookID)
			}
			l.total--
			l.mu.Unlock()
			select {
			case l.freed <- struct{}{}:
			default:
			}
		}()
	}
	l.read = rest
	return started
}

func (d *Dispatcher) gauges(ctx context.Context) {
	q, err := d.Store.WebhookQueue(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.Log.Warn("webhooks: queue count failed", "error", err.Error())
		}
		return
	}
	if d.Observer != nil {
		d.Observer.Queue(q)
	}
}

func (d *Dispatcher) trim(ctx context.Context) {
	n, err := d.Store.TrimWebhooks(ctx, webhooks.WebhookTrim{MaxPending: d.MaxPending, FinishedBefore: time.Now().Add(-d.KeepFinished)})
	if err != nil {
		if ctx.Err() == nil {
			d.Log.Warn("webhooks: trimming the queues failed", "error", err.Error())
		}
		return
	}
	if n > 0 {
		d.Log.Warn("webhooks: undelivered events of disabled subscriptions expired", "count", n, "max_pending", d.MaxPending)
		if d.Observer != nil {
			d.Observer.Expired(n)
		}
	}
}

// Envelope is a delivery's body: the Standard Webhooks payload.
type Envelope struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// body renders a delivery's payload: the event with the report as it is
// at the first attempt.
func (d *Dispatcher) body(ctx context.Context, dl webhooks.Delivery) ([]byte, error) {
	t, err := d.Store.GetThreat(ctx, dl.ThreatID)
	if err != nil {
		return nil, fmt.Errorf("reading report %s: %w", dl.ThreatID, err)
	}
	return json.Marshal(Envelope{Type: webhooks.EventType(dl.Kind), Timestamp: dl.EventAt.UTC().Format(time.RFC3339Nano), Data: record.Public(t, core.CommunityOf(d.Community, t))})
}

// attempt makes one delivery attempt and records its outcome.
func (d *Dispatcher) attempt(ctx context.Context, dl webhooks.Delivery) {
	payload := dl.Payload
	var first []byte
	if payload == nil {
		b, err := d.body(ctx, dl)
		if err != nil {
			if ctx.Err() == nil {
				d.Log.Warn("webhooks: cannot render an event; will retry", "webhook", dl.WebhookID, "seq", dl.Seq, "error", err.Error())
			}
			return
		}
		payload, first = b, b
	}
	start := time.Now()
	status, errText := d.post(ctx, dl, payload, start)
	if ctx.Err() != nil {
		return // stopping: the attempt is made again by the next holder
	}
	took := time.Since(start)
	now := time.Now()
	a := webhooks.DeliveryAttempt{WebhookID: dl.WebhookID, Seq: dl.Seq, ThreatID: dl.ThreatID, Kind: dl.Kind, At: start, Status: status, Latency: took, Error: errText}
	o := webhooks.AttemptOutcome{Payload: first}
	outcome := "delivered"
	switch {
	case errText == "":
		a.State = webhooks.DeliveryDelivered
	case now.Sub(dl.EventAt) >= d.Policy.Window:
		a.State = webhooks.DeliveryFailed
		outcome = "failed"
	default:
		a.State = webhooks.DeliveryPending
		o.NextAt = d.Policy.Next(now, dl.Attempts+1)
		outcome = "retry"
	}
	if errText != "" && !dl.Webhook.FailingSince.IsZero() && now.Sub(dl.Webhook.FailingSince) >= d.Policy.Window {
		o.Disable = fmt.Sprintf("failing since %s: %s", dl.Webhook.FailingSince.UTC().Format(time.RFC3339), errText)
	}
	o.Attempt = a
	if err := d.Store.RecordAttempt(context.WithoutCancel(ctx), o); err != nil {
		d.Log.Warn("webhooks: recording an attempt failed; the event will be sent again", "webhook", dl.WebhookID, "seq", dl.Seq, "error", err.Error())
	}
	if d.Observer != nil {
		d.Observer.Delivery(outcome, took)
	}
	if o.Disable != "" {
		d.Log.Warn("webhooks: subscription disabled", "webhook", dl.WebhookID, "url", webhooks.WebhookURLForLog(dl.Webhook.URL), "reason", o.Disable)
	} else if errText != "" {
		d.Log.Info("webhooks: delivery failed", "webhook", dl.WebhookID, "seq", dl.Seq, "attempt", dl.Attempts+1, "state", a.State, "error", errText)
	}
}

// post sends a delivery and returns the answer's status and, for anything
// but 2xx, what went wrong.
func (d *Dispatcher) post(ctx context.Context, dl webhooks.Delivery, payload []byte, at time.Time) (int, string) {
	if err := webhooks.CheckWebhookURL(dl.Webhook.URL, d.AllowPrivate); err != nil {
		return 0, err.Error()
	}
	id := dl.ID()
	sig, err := webhooks.SignWebhook(dl.Webhook.Secret, id, at, payload)
	if err != nil {
		return 0, err.Error()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dl.Webhook.URL, bytes.NewReader(payload))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", d.UserAgent)
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", fmt.Sprint(at.Unix()))
	req.Header.Set("webhook-signature", sig)
	resp, err := d.Client.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			err = ue.Unwrap()
		}
		return 0, err.Error()
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorText))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, ""
	}
	text := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if s := printable(head); s != "" {
		text += ": " + s
	}
	return resp.StatusCode, text
}

// printable keeps the valid, printable part of an answer's first bytes.
func printable(b []byte) string {
	var out []rune
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		switch {
		case r == utf8.RuneError:
			out = append(out, '?')
		case r == '\n' || r == '\r' || r == '\t':
			out = append(out, ' ')
		case r < 0x20 || r == 0x7f:
		default:
			out = append(out, r)
		}
	}
	return string(bytes.TrimSpace([]byte(string(out))))
}
