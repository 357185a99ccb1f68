package tests

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/ops"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// awaitReady waits until w is ready: its consume loops start fetching
// just after Started.
func awaitReady(t *testing.T, w *worker.Worker) {
	t.Helper()
	require.Eventually(t, func() bool { return w.CheckReady() == nil }, 20*time.Second, 5*time.Millisecond,
		"not ready: %v", w.CheckReady())
}

// /readyz: not before the worker started, yes once it fetches, not once
// the connection to the server is lost. /livez stays ok throughout.
func TestReadyzFollowsConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	disconnected := make(chan struct{}, 1)
	nc, err := nats.Connect(b.url, nats.DisconnectErrHandler(func(*nats.Conn, error) {
		select {
		case disconnected <- struct{}{}:
		default:
		}
	}))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	m := ops.NewMetrics()
	w, err := worker.New(nc, worker.Config{Metrics: m, Log: natstest.Quiet(), FetchWait: time.Second})
	require.NoError(t, err)
	get := serveOps(t, w, m)

	code, body := get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "starting")
	code, _ = get("/livez")
	require.Equal(t, http.StatusOK, code)

	stop, _ := runOwned(t, w)
	awaitReady(t, w)
	code, body = get("/readyz")
	require.Equal(t, http.StatusOK, code, body)

	b.srv.Shutdown()
	select {
	case <-disconnected:
	case <-time.After(20 * time.Second):
		t.Fatal("the connection did not notice the server going away")
	}
	code, body = get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "NATS connection is")
	code, _ = get("/livez")
	require.Equal(t, http.StatusOK, code, "a lost connection is not a dead process")

	nc.Close() // no server to flush to at shutdown
	require.NoError(t, stop())
	code, body = get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "stopped")
}

// A stopping worker is not ready while it finishes the task it holds, and
// stays live; it finishes the task within its grace period.
func TestReadyzDraining(t *testing.T) {
	t.Parallel()
	b := setup(t)
	nc, err := nats.Connect(b.url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	m := ops.NewMetrics()
	h := newHold()
	w, err := worker.New(nc, worker.Config{Metrics: m, Runners: h.set(), Grace: 5 * time.Minute, Log: natstest.Quiet(), FetchWait: time.Second})
	require.NoError(t, err)
	get := serveOps(t, w, m)
	stop, done := runOwned(t, w)
	t.Cleanup(h.Release)

	awaitReady(t, w)
	after := b.submit(task("wf-drain", "D"))
	h.await(t, 1)
	code, body := get("/readyz")
	require.Equal(t, http.StatusOK, code, body)

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }() // SIGTERM
	require.Eventually(t, func() bool { return w.CheckReady() != nil }, 10*time.Second, 5*time.Millisecond)
	code, body = get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "draining")
	require.Contains(t, body, "tasks in flight: 1")
	code, _ = get("/livez")
	require.Equal(t, http.StatusOK, code)
	select {
	case <-done:
		t.Fatal("the worker stopped with a task still running")
	default:
	}
	require.EqualValues(t, 1, w.Pool().Stats().InFlight, "the task is still running")

	h.Release()
	require.NoError(t, within(t, stopped, "the worker did not finish draining"))
	got := b.waitTerminal("wf-drain", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got["D"].EventType, "the held task finished within the grace period")
}

// A consume loop that cannot run makes the worker neither live nor ready,
// with the reason.
func TestReadyzLivezConsumeLoopExited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	natstest.Provision(t, ctx, b.js, broker.Settings{Names: b.names})
	// A push consumer under the queue's name: the worker cannot use it.
	_, err := b.js.CreatePushConsumer(ctx, b.names.TasksStream(), jetstream.ConsumerConfig{
		Durable: b.names.Consumer("default"), DeliverSubject: "elsewhere", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: b.names.TaskSubject("default"),
	})
	require.NoError(t, err)
	nc, err := nats.Connect(b.url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	m := ops.NewMetrics()
	w, err := worker.New(nc, worker.Config{Metrics: m, Log: natstest.Quiet()})
	require.NoError(t, err)
	get := serveOps(t, w, m)
	stop, _ := runOwned(t, w)

	require.Eventually(t, func() bool { return w.CheckLive() != nil }, 10*time.Second, 5*time.Millisecond)
	code, body := get("/livez")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "not live\n", body, "the reason is logged, not served")
	require.ErrorContains(t, w.CheckLive(), "queue default: consume loop exited")
	code, body = get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "queue default: fetch loop is not running")
	require.Error(t, stop(), "Run reports the consume loop's error")
}
