// Package ops serves a worker's operational HTTP endpoints (/livez,
// /readyz, /metrics) and its Prometheus metrics.
package ops

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/droverhq/drover/subjects"
)

// Metrics are a worker's Prometheus collectors. They implement
// pipeline.Metrics and consumers.Metrics, so the pipeline and the task
// consumers report to them without importing Prometheus.
type Metrics struct {
	Registry     *prometheus.Registry
	tasks        *prometheus.CounterVec
	roleDuration *prometheus.HistogramVec
	runnerCalls  *prometheus.CounterVec
	cache        *prometheus.CounterVec
	cachePutFail prometheus.Counter
	liveLines    *prometheus.CounterVec
	auditPublish prometheus.Histogram
	roleGap      *prometheus.HistogramVec
	submitStart  prometheus.Histogram
	dlq          *prometheus.CounterVec
	inFlight     prometheus.Gauge
	poolSize     prometheus.Gauge
	redeliveries prometheus.Counter
	settled      *prometheus.CounterVec
	heartbeats   prometheus.Counter
	panics       prometheus.Counter
	jsAvailable  prometheus.Gauge
	auditWeak    prometheus.Gauge
	storeFull    prometheus.Gauge
}

// settleActions are the values of drover_consumer_settled_total's action
// label, exposed at zero from the start.
var settleActions = []string{"ack", "term", "nak", "abandon"}

// NewMetrics registers Drover's collectors, plus the Go and process ones,
// on a new registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_tasks_total", Help: "Tasks ended by this worker, by terminal event.",
		}, []string{"outcome"}),
		roleDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_role_duration_seconds", Help: "Runner call durations by role and runner.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12),
		}, []string{"role", "runner"}),
		runnerCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_runner_calls_total", Help: "Runner calls by role, runner and result (ok or error).",
		}, []string{"role", "runner", "result"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_cache_lookups_total", Help: "Role cache lookups by role and result (hit or miss).",
		}, []string{"role", "result"}),
		cachePutFail: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_cache_put_failures_total", Help: "Role results that could not be cached.",
		}),
		liveLines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_live_lines_total", Help: "Agents' live activity lines by result: published, or dropped (over a role run's bounds, or the publisher behind).",
		}, []string{"result"}),
		auditPublish: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "drover_audit_publish_seconds", Help: "Latency of fenced audit publishes.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
		roleGap: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_role_gap_seconds", Help: "Time from one role's runner returning to the next role's runner starting, by the role starting.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12),
		}, []string{"role"}),
		submitStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "drover_submit_to_start_seconds", Help: "Time from the server storing a request to the planner's runner starting on its first delivery.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}),
		dlq: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_dlq_entries_total", Help: "DLQ entries this worker wrote, by reason.",
		}, []string{"reason"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_tasks_in_flight", Help: "Tasks running on this worker's pool.",
		}),
		poolSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drover_pool_size", Help: "Slots of this worker's pool: the most tasks it runs at once.",
		}),
		redeliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_redeliveries_total", Help: "Task deliveries this worker received that were not the first.",
		}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_consumer_settled_total", Help: "Task messages settled by this worker, by action (ack, term, nak, abandon).",
		}, []string{"action"}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_heartbeats_total", Help: "In-progress acks sent to keep running tasks claimed.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drover_consumer_panics_total", Help: "Task messages whose handling panicked outside a runner (recovered; retried, then failed).",
		}),
	}
	m.jsAvailable = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "drover_jetstream_available",
		Help: "1 when the last readiness check found JetStream answering for Drover's streams, 0 when it did not (no quorum).",
	})
	m.jsAvailable.Set(1)
	m.auditWeak = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "drover_audit_stream_weakened",
		Help: "1 when the last check found the audit stream's settings weakened (deletes, purges, rollups, TTLs or limits allowed), 0 otherwise.",
	})
	m.storeFull = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "drover_store_full",
		Help: "1 while the server refuses the worker's writes for want of storage (insufficient resources), 0 otherwise.",
	})
	for _, a := range settleActions {
		m.settled.WithLabelValues(a)
	}
	r.MustRegister(m.tasks, m.roleDuration, m.runnerCalls, m.cache, m.cachePutFail, m.liveLines, m.auditPublish, m.roleGap, m.submitStart,
		m.dlq, m.inFlight, m.poolSize, m.redeliveries, m.settled, m.heartbeats, m.panics, m.jsAvailable, m.auditWeak, m.storeFull,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// RoleDone records a role result.
func (m *Metrics) RoleDone(role subjects.Role, runner string, cached bool, d time.Duration, err error) {
	if cached {
		m.cache.WithLabelValues(string(role), "hit").Inc()
		return
	}
	m.cache.WithLabelValues(string(role), "miss").Inc()
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.runnerCalls.WithLabelValues(string(role), runner, result).Inc()
	m.roleDuration.WithLabelValues(string(role), runner).Observe(d.Seconds())
}

// TaskDone counts a terminal event.
func (m *Metrics) TaskDone(outcome subjects.EventType) {
	m.tasks.WithLabelValues(string(outcome)).Inc()
}

// CachePutFailed counts a result that could not be cached.
func (m *Metrics) CachePutFailed() { m.cachePutFail.Inc() }

// LiveLine implements pipeline.LiveMetrics.
func (m *Metrics) LiveLine(published bool) {
	if published {
		m.liveLines.WithLabelValues("published").Inc()
	} else {
		m.liveLines.WithLabelValues("dropped").Inc()
	}
}

// AuditPublished observes one audit publish.
func (m *Metrics) AuditPublished(d time.Duration) { m.auditPublish.Observe(d.Seconds()) }

// RoleGap observes the time between one role's runner returning and role's
// runner starting (pipeline.Metrics).
func (m *Metrics) RoleGap(role subjects.Role, d time.Duration) {
	m.roleGap.WithLabelValues(string(role)).Observe(d.Seconds())
}

// SubmitToStart observes the time from a request being stored to its
// planner starting (pipeline.Metrics).
func (m *Metrics) SubmitToStart(d time.Duration) { m.submitStart.Observe(d.Seconds()) }

// DLQWritten counts a DLQ entry this worker stored.
func (m *Metrics) DLQWritten(reason subjects.Reason) { m.dlq.WithLabelValues(string(reason)).Inc() }

// PoolSize sets the pool size gauge.
func (m *Metrics) PoolSize(n int) { m.poolSize.Set(float64(n)) }

// InFlight moves the in-flight gauge by delta.
func (m *Metrics) InFlight(delta int) { m.inFlight.Add(float64(delta)) }

// Redelivered counts a delivery that was not the first.
func (m *Metrics) Redelivered() { m.redeliveries.Inc() }

// Settled counts a message settled with action.
func (m *Metrics) Settled(action string) { m.settled.WithLabelValues(action).Inc() }

// Heartbeat counts an in-progress ack.
func (m *Metrics) Heartbeat() { m.heartbeats.Inc() }

// Panicked counts a task message whose handling panicked.
func (m *Metrics) Panicked() { m.panics.Inc() }

// StoreFull sets drover_store_full.
func (m *Metrics) StoreFull(full bool) {
	if full {
		m.storeFull.Set(1)
	} else {
		m.storeFull.Set(0)
	}
}

// AuditStreamWeakened sets drover_audit_stream_weakened.
func (m *Metrics) AuditStreamWeakened(weak bool) {
	if weak {
		m.auditWeak.Set(1)
	} else {
		m.auditWeak.Set(0)
	}
}

// JetStreamAvailable sets drover_jetstream_available from a readiness check.
func (m *Metrics) JetStreamAvailable(ok bool) {
	if ok {
		m.jsAvailable.Set(1)
	} else {
		m.jsAvailable.Set(0)
	}
}
