package tests

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/ops"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// holdRunners is a runner set whose planner announces each call on entered
// and blocks until release is closed (or its context ends); the other
// roles are the sim. It holds tasks in flight for as long as a test needs.
type holdRunners struct {
	entered chan string
	release chan struct{}
	once    sync.Once
}

func newHold() *holdRunners {
	return &holdRunners{entered: make(chan string, 64), release: make(chan struct{})}
}

func (h *holdRunners) set() runner.Set {
	sim := runner.NewSim(runner.SimOptions{})
	planner := runner.Func{ID: "held-planner/v1", F: func(ctx context.Context, req runner.Request) (runner.Result, error) {
		h.entered <- req.Task.ID
		select {
		case <-h.release:
			return sim.Run(ctx, req)
		case <-ctx.Done():
			return runner.Result{}, ctx.Err()
		}
	}}
	return runner.Set{Planner: planner, Implementer: sim, Judge: sim}
}

// Release lets every held planner go on; calling it again does nothing.
// Register it as a cleanup after the workers start, so it runs before
// their cleanups stop them.
func (h *holdRunners) Release() { h.once.Do(func() { close(h.release) }) }

// await waits for n planner calls to have started.
func (h *holdRunners) await(t *testing.T, n int) {
	t.Helper()
	for range n {
		within(t, h.entered, "a held task did not start")
	}
}

// serveOps serves the ops endpoints of w until the test ends and returns
// a GET function for them.
func serveOps(t *testing.T, w *worker.Worker, m *ops.Metrics) func(path string) (int, string) {
	t.Helper()
	srv, err := ops.Listen("127.0.0.1:0", w.CheckLive, w.CheckReady, m.Registry)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, natstest.Recv(t, served, 30*time.Second)) })
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	return func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get("http://" + srv.Addr() + path)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
}

// metric returns the value of the series name{labels} (0 when absent).
func metric(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, err := gatherMetric(reg, name, labels...)
	require.NoError(t, err)
	return v
}

// gatherMetric is metric without a test to fail, for Eventually callbacks.
func gatherMetric(reg prometheus.Gatherer, name string, labels ...string) (float64, error) {
	families, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range s.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case s.GetCounter() != nil:
				return s.GetCounter().GetValue(), nil
			case s.GetGauge() != nil:
				return s.GetGauge().GetValue(), nil
			case s.GetHistogram() != nil:
				return float64(s.GetHistogram().GetSampleCount()), nil
			}
		}
	}
	return 0, nil
}

// awaitMetric waits until name{labels} reaches want: the consumer settles
// a message just after the pipeline wrote the events a test waits for.
func awaitMetric(t *testing.T, reg prometheus.Gatherer, want float64, name string, labels ...string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := gatherMetric(reg, name, labels...)
		if assert.NoError(c, err) {
			assert.Equal(c, want, got)
		}
	}, 30*time.Second, 5*time.Millisecond, "%s%v", name, labels)
}

func TestMetricCompletedTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := ops.NewMetrics()
	b.startWorker(worker.Config{Concurrency: 3, Metrics: m})
	b.waitTerminal("wf-m", b.submit(task("wf-m", "T1")), 1)
	awaitMetric(t, m.Registry, 1, "drover_consumer_settled_total", "action", "ack")

	r := m.Registry
	require.Equal(t, 1.0, metric(t, r, "drover_tasks_total", "outcome", "task_completed"))
	require.Equal(t, 3.0, metric(t, r, "drover_pool_size"))
	require.Equal(t, 0.0, metric(t, r, "drover_tasks_in_flight"))
	for _, role := range subjects.Roles {
		require.Equal(t, 1.0, metric(t, r, "drover_cache_lookups_total", "role", string(role), "result", "miss"), role)
		require.Equal(t, 1.0, metric(t, r, "drover_runner_calls_total", "role", string(role), "result", "ok"), role)
		require.Equal(t, 1.0, metric(t, r, "drover_role_duration_seconds", "role", string(role)), role)
	}
	require.Equal(t, 5.0, metric(t, r, "drover_audit_publish_seconds"), "five audit events")
	require.Zero(t, metric(t, r, "drover_redeliveries_total"))
	require.Zero(t, metric(t, r, "drover_consumer_settled_total", "action", "nak"))
	require.Zero(t, metric(t, r, "drover_dlq_entries_total"))
}

func TestMetricInFlightAndPool(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := ops.NewMetrics()
	h := newHold()
	b.startWorker(worker.Config{Concurrency: 4, Metrics: m, Runners: h.set()})
	t.Cleanup(h.Release)
	after := b.submit(task("wf-if", "A"), task("wf-if", "B"))
	h.await(t, 2)
	require.Equal(t, 2.0, metric(t, m.Registry, "drover_tasks_in_flight"))
	require.Equal(t, 4.0, metric(t, m.Registry, "drover_pool_size"))
	h.Release()
	b.waitTerminal("wf-if", after, 2)
	awaitMetric(t, m.Registry, 0, "drover_tasks_in_flight")
	awaitMetric(t, m.Registry, 2, "drover_consumer_settled_total", "action", "ack")
}

func TestMetricFailedTaskWritesDLQ(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := ops.NewMetrics()
	b.startWorker(worker.Config{Concurrency: 2, Metrics: m, Consumer: broker.ConsumerSettings{MaxDeliver: 2}})
	always := `{"fail": {"role": "planner", "times": -1}}`
	got := b.waitTerminal("wf-f", b.submit(withSim(task("wf-f", "F"), always)), 1)
	require.Equal(t, subjects.EventTaskFailed, got["F"].EventType)
	awaitMetric(t, m.Registry, 1, "drover_consumer_settled_total", "action", "term")

	r := m.Registry
	require.Equal(t, 1.0, metric(t, r, "drover_tasks_total", "outcome", "task_failed"))
	require.Equal(t, 1.0, metric(t, r, "drover_dlq_entries_total", "reason", string(subjects.ReasonMaxDeliveries)))
	require.Equal(t, 1.0, metric(t, r, "drover_consumer_settled_total", "action", "ack"), "the first try's retry was scheduled and its request acked")
	require.Zero(t, metric(t, r, "drover_consumer_settled_total", "action", "nak"))
	require.Zero(t, metric(t, r, "drover_redeliveries_total"), "a retry is a new request, not a redelivery")
	require.Equal(t, 2.0, metric(t, r, "drover_runner_calls_total", "role", "planner", "result", "error"))

	// A request that cannot be read is rejected: one more DLQ entry.
	b.publishRaw([]byte("{not json"))
	awaitMetric(t, r, 1, "drover_dlq_entries_total", "reason", string(subjects.ReasonInvalidJSON))
	awaitMetric(t, r, 1, "drover_tasks_total", "outcome", "task_rejected")
	awaitMetric(t, r, 2, "drover_consumer_settled_total", "action", "term")
}

func TestMetricRedelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := ops.NewMetrics()
	b.startWorker(worker.Config{Concurrency: 2, Metrics: m})
	once := `{"fail": {"role": "implementer", "times": 1}}`
	got := b.waitTerminal("wf-r", b.submit(withSim(task("wf-r", "R"), once)), 1)
	require.Equal(t, subjects.EventTaskCompleted, got["R"].EventType)
	// The failed try's request is acked once its retry is scheduled; the
	// retry is a new request, not a redelivery (row 19).
	awaitMetric(t, m.Registry, 2, "drover_consumer_settled_total", "action", "ack")

	r := m.Registry
	require.Zero(t, metric(t, r, "drover_consumer_settled_total", "action", "nak"))
	require.Zero(t, metric(t, r, "drover_redeliveries_total"))
	require.Equal(t, 1.0, metric(t, r, "drover_runner_calls_total", "role", "implementer", "result", "error"))
	require.Equal(t, 1.0, metric(t, r, "drover_runner_calls_total", "role", "implementer", "result", "ok"))
	require.Zero(t, metric(t, r, "drover_dlq_entries_total"))
}

func TestMetricCacheHitOnRerun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := ops.NewMetrics()
	b.startWorker(worker.Config{Concurrency: 2, Metrics: m})
	b.waitTerminal("wf-c1", b.submit(task("wf-c1", "T")), 1)
	b.waitTerminal("wf-c2", b.submit(task("wf-c2", "T")), 1)
	awaitMetric(t, m.Registry, 2, "drover_consumer_settled_total", "action", "ack")
	for _, role := range subjects.Roles {
		require.Equal(t, 1.0, metric(t, m.Registry, "drover_cache_lookups_total", "role", string(role), "result", "hit"), role)
		require.Equal(t, 1.0, metric(t, m.Registry, "drover_runner_calls_total", "role", string(role), "result", "ok"), role)
	}
}

func TestMetricHeartbeat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := ops.NewMetrics()
	// Heartbeats go every ack wait / 3 = 500ms; the planner takes 1s.
	b.startWorker(worker.Config{Concurrency: 1, Metrics: m, Consumer: broker.ConsumerSettings{AckWait: 1500 * time.Millisecond}})
	slow := `{"latency_ms": {"planner": 1000}}`
	got := b.waitTerminal("wf-hb", b.submit(withSim(task("wf-hb", "H"), slow)), 1)
	require.Equal(t, subjects.EventTaskCompleted, got["H"].EventType)
	require.GreaterOrEqual(t, metric(t, m.Registry, "drover_heartbeats_total"), 1.0)
	require.Zero(t, metric(t, m.Registry, "drover_redeliveries_total"), "the heartbeats kept the claim")
}

// The endpoints expose the metrics in the Prometheus text format.
func TestOpsMetricsEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := ops.NewMetrics()
	nc, err := nats.Connect(b.url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	w, err := worker.New(nc, worker.Config{Metrics: m})
	require.NoError(t, err)
	get := serveOps(t, w, m)
	code, body := get("/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, name := range []string{"drover_tasks_in_flight", "drover_pool_size", "drover_redeliveries_total",
		`drover_consumer_settled_total{action="abandon"}`, "drover_heartbeats_total", "drover_audit_publish_seconds_count"} {
		require.Contains(t, body, name)
	}
}
