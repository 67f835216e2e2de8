package api

import (
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/webhooks"
)

// Metrics are the daemon's Prometheus metrics (docs/operations/metrics.md),
// served over plain HTTP on their own listener
// (metrics.listen), never on the API's.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// observers holds each (method, route, status)'s counter and
	// histogram once looked up: every request counts itself, and the
	// label look-ups hashed three strings twice a request.
	observers sync.Map // observerKey → *observer
	restarts  *prometheus.CounterVec
	imported  *prometheus.CounterVec
	runs      *prometheus.CounterVec
	blocks    *prometheus.CounterVec
	renders   *prometheus.CounterVec
	decisions *prometheus.CounterVec
	// decisionsDropped counts decisions the recorder could not queue.
	decisionsDropped prometheus.Counter
	// siemDropped counts syslog messages the SIEM's queue could not take.
	siemDropped prometheus.Counter

	webhookAttempts *prometheus.CounterVec
	webhookLatency  prometheus.Histogram
	webhookExpired  prometheus.Counter
	webhookPending  prometheus.Gauge
	webhookOldest   prometheus.Gauge

	analysis analysisMetrics
}

// NewMetrics returns the daemon's metrics with the Go runtime and process
// collectors registered.
func NewMetrics(version string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threatd_http_requests_total",
			Help: "HTTP requests answered, by method, route (the matched route pattern; \"unmatched\" for unknown paths) and status code.",
		}, []string{"method", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "threatd_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method, route and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route", "code"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threatd_plugin_restarts_total",
			Help: "Plugin processes started again after theirs had exited, by kind (storage, exporter) and name.",
		}, []string{"kind", "name"}),
		imported: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threatd_import_records_total",
			Help: "Records read by scheduled sources, by source and result (imported, updated, unchanged, withdrawn, attached, skipped).",
		}, []string{"source", "result"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threatd_import_runs_total",
			Help: "Runs of scheduled sources, by source and outcome (ok, failed).",
		}, []string{"source", "outcome"}),
		blocks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threatd_firewall_blocks_total",
			Help: "Package versions the registry firewall refused, by registry (npm, pypi, go).",
		}, []string{"registry"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threatd_firewall_decisions_total",
			Help: "Firewall decisions about one package version (docs/firewall.md), by ecosystem, rule (malicious, quarantine, install_scripts) and action (block, warn, monitor, waived).",
		}, []string{"ecosystem", "rule", "action"}),
		decisionsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "threatd_firewall_decisions_dropped_total",
			Help: "Firewall decisions not recorded because storage fell behind and the recorder's queue (65,536) was full: the install was never held up for them. Alert on any.",
		}),
		siemDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "threatd_siem_messages_dropped_total",
			Help: "Syslog messages to the SIEM (siem.syslog.address) dropped: the receiver was down or slow and the queue (10,000) was full, or a UDP message was longer than a datagram. Alert on any.",
		}),
		renders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threatd_firewall_renderings_total",
			Help: "Upstream documents the registry firewall rewrote, by registry: one rendering serves every client asking for the same document under the same verdicts, and is kept.",
		}, []string{"registry"}),
		webhookAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threatd_webhook_deliveries_total",
			Help: "Webhook delivery attempts, by outcome: delivered (2xx), retry (failed, tried again later), failed (still failing at the end of its retry window).",
		}, []string{"outcome"}),
		webhookLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "threatd_webhook_delivery_duration_seconds",
			Help:    "Time of one webhook delivery attempt, from connecting to the answer.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		webhookExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "threatd_webhook_events_expired_total",
			Help: "Undelivered events dropped from the bounded queues of disabled subscriptions (webhooks.max_pending).",
		}),
		webhookPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "threatd_webhook_queue_depth",
			Help: "Webhook events waiting for delivery, all subscriptions together (set by the delivering daemon).",
		}),
		webhookOldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "threatd_webhook_oldest_pending_seconds",
			Help: "Age of the oldest undelivered webhook event; 0 when none waits.",
		}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "threatd_build_info",
		Help: "The running build: 1, labelled with its version and Go version.",
	}, []string{"version", "go_version"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	m.registerAnalysis()
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.latency, m.restarts, m.imported, m.runs, m.blocks, m.renders, m.decisions, m.decisionsDropped, m.siemDropped, build,
		m.webhookAttempts, m.webhookLatency, m.webhookExpired, m.webhookPending, m.webhookOldest,
	)
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	return mux
}

// Watch adds the gauges read at each scrape: the index of verified reports
// and how far behind the change feed it is (lag reports the follower's
// index.Follower.Lag).
func (m *Metrics) Watch(idx *index.Index, lag func() (time.Duration, bool)) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "threatd_index_verified_reports",
			Help: "Verified reports in the in-memory index that answers checks.",
		}, func() float64 { return float64(idx.Len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "threatd_index_table_bytes",
			Help: "Bytes of the index's table of verified reports (hash slots, records, keys and version lists); on Linux it is mapped outside the Go heap, so go_memstats does not count it.",
		}, func() float64 { return float64(idx.TableBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "threatd_index_loaded",
			Help: "1 once the index of verified reports is loaded at start (checks answer 503 before).",
		}, func() float64 {
			if ready, _, _ := idx.Progress(); ready {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "threatd_index_spill_entries",
			Help: "Verified reports whose check answer is in the index's spill file (cache.spill); the others are read from storage.",
		}, func() float64 { return float64(idx.SpillStats().Entries) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "threatd_index_spill_bytes",
			Help:        "Bytes of the index's spill file: entries in use (kind=live) and replaced ones awaiting a rewrite (kind=garbage).",
			ConstLabels: prometheus.Labels{"kind": "live"},
		}, func() float64 { return float64(idx.SpillStats().Live) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "threatd_index_spill_bytes",
			Help:        "Bytes of the index's spill file: entries in use (kind=live) and replaced ones awaiting a rewrite (kind=garbage).",
			ConstLabels: prometheus.Labels{"kind": "garbage"},
		}, func() float64 { return float64(idx.SpillStats().Garbage) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "threatd_index_spill_filled",
			Help: "1 once the first pass of the spill's fill over the reports loaded at start has ended (cache.spill): each has an entry but those changed meanwhile, which the follower writes.",
		}, func() float64 {
			if idx.SpillStats().FilledOnce {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "threatd_change_feed_seq",
			Help: "Position in the storage change feed the index has applied.",
		}, func() float64 { return float64(idx.LastSeq()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "threatd_change_feed_lag_seconds",
			Help: "Seconds since the daemon last caught up with the storage change feed: how stale checks and caches may be (about cache.freshness when healthy; -1 before the first catch-up).",
		}, func() float64 {
			d, ok := lag()
			if !ok {
				return -1
			}
			return d.Seconds()
		}),
	)
}

// firewallBlocked counts a version the registry firewall refused.
func (m *Metrics) firewallBlocked(registry string) {
	if m != nil {
		m.blocks.WithLabelValues(registry).Inc()
	}
}

// FirewallDecision counts a firewall decision.
func (m *Metrics) FirewallDecision(ecosystem, rule, action string) {
	if m != nil {
		m.decisions.WithLabelValues(ecosystem, rule, action).Inc()
	}
}

// FirewallDecisionDropped counts a decision the recorder could not queue.
func (m *Metrics) FirewallDecisionDropped() {
	if m != nil {
		m.decisionsDropped.Inc()
	}
}

// SIEMDropped counts a syslog message the SIEM's queue could not take.
func (m *Metrics) SIEMDropped() {
	if m != nil {
		m.siemDropped.Inc()
	}
}

// firewallRendered counts an upstream document the firewall rewrote.
func (m *Metrics) firewallRendered(registry string) {
	if m != nil {
		m.renders.WithLabelValues(registry).Inc()
	}
}

// PluginRestarted counts a plugin process started again after its exit.
func (m *Metrics) PluginRestarted(kind, name string) {
	if m != nil {
		m.restarts.WithLabelValues(kind, name).Inc()
	}
}

// SourceRun counts a scheduled source's run and, when it succeeded, its
// records by result.
func (m *Metrics) SourceRun(source string, counts map[string]int, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.runs.WithLabelValues(source, "failed").Inc()
		return
	}
	m.runs.WithLabelValues(source, "ok").Inc()
	for result, n := range counts {
		m.imported.WithLabelValues(source, result).Add(float64(n))
	}
}

// observe records one answered request. Methods outside HTTP's own are
// counted as "other" and unknown paths as "unmatched": a client cannot
// create label values.
func (m *Metrics) observe(method, route string, status int, took time.Duration) {
	if m == nil {
		return
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
	default:
		method = "other"
	}
	if route == "" || route == "/*" || route == "*" {
		route = "unmatched"
	}
	k := observerKey{method, route, status}
	o, ok := m.observers.Load(k)
	if !ok {
		// Routes are the registered patterns and methods a fixed set, so
		// the keys are bounded.
		code := strconv.Itoa(status)
		o, _ = m.observers.LoadOrStore(k, &observer{m.requests.WithLabelValues(method, route, code), m.latency.WithLabelValues(method, route, code)})
	}
	ob := o.(*observer)
	ob.requests.Inc()
	ob.latency.Observe(took.Seconds())
}

// observerKey is one series of the request metrics.
type observerKey struct {
	method, route string
	status        int
}

type observer struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// Delivery counts a webhook delivery attempt (webhooks.Observer).
func (m *Metrics) Delivery(outcome string, took time.Duration) {
	m.webhookAttempts.WithLabelValues(outcome).Inc()
	m.webhookLatency.Observe(took.Seconds())
}

// Expired counts events expired from disabled subscriptions' queues.
func (m *Metrics) Expired(n int64) { m.webhookExpired.Add(float64(n)) }

// Queue sets the webhook queue gauges.
func (m *Metrics) Queue(q webhooks.WebhookQueue) {
	m.webhookPending.Set(float64(q.Pending))
	if q.Oldest.IsZero() {
		m.webhookOldest.Set(0)
		return
	}
	m.webhookOldest.Set(time.Since(q.Oldest).Seconds())
}
