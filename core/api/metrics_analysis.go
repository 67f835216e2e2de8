package api

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// analysisMetrics are package analysis's (docs/analysis.md).
type analysisMetrics struct {
	done    *prometheus.CounterVec
	seconds *prometheus.HistogramVec
	queued  prometheus.Gauge
	running prometheus.Gauge
	refused prometheus.Counter
}

func (m *Metrics) registerAnalysis() {
	m.analysis = analysisMetrics{
		done: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threatd_analysis_total",
			Help: "Package versions analysed, by ecosystem and verdict (clean, suspicious, error).",
		}, []string{"ecosystem", "verdict"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "threatd_analysis_duration_seconds",
			Help:    "Time to analyse one version, fetching its archives included, by ecosystem.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"ecosystem"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "threatd_analysis_queue_queued",
			Help: "Versions queued for analysis and not yet claimed, across every daemon of the database.",
		}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "threatd_analysis_queue_running",
			Help: "Versions being analysed (leased to a daemon), across every daemon of the database.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "threatd_analysis_queue_full_total",
			Help: "Versions not queued for analysis because the queue held analysis.max_queued unfinished ones.",
		}),
	}
	a := m.analysis
	m.reg.MustRegister(a.done, a.seconds, a.queued, a.running, a.refused)
}

// AnalysisDone counts one finished analysis.
func (m *Metrics) AnalysisDone(ecosystem, verdict string, took time.Duration) {
	if m != nil {
		m.analysis.done.WithLabelValues(ecosystem, verdict).Inc()
		m.analysis.seconds.WithLabelValues(ecosystem).Observe(took.Seconds())
	}
}

// AnalysisQueue sets the queue's length.
func (m *Metrics) AnalysisQueue(queued, running int64) {
	if m != nil {
		m.analysis.queued.Set(float64(queued))
		m.analysis.running.Set(float64(running))
	}
}

// AnalysisQueueFull counts versions the full queue refused.
func (m *Metrics) AnalysisQueueFull(n int) {
	if m != nil {
		m.analysis.refused.Add(float64(n))
	}
}
