package tests

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/ops"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// flakyEndpoint is a sim runner whose model endpoint can be down: it
// implements runner.HealthChecker and counts the checks.
type flakyEndpoint struct {
	*runner.Sim
	down   atomic.Bool
	checks atomic.Int64
}

var errEndpointDown = errors.New("implementer: openai model m at http://127.0.0.1:9/v1: endpoint unreachable: connection refused")

func (f *flakyEndpoint) Health(context.Context) error {
	f.checks.Add(1)
	if f.down.Load() {
		return errEndpointDown
	}
	return nil
}

// /readyz says why while a runner's model endpoint is down; the worker
// fetches nothing meanwhile (the task waits in its queue, not failed), and
// fetches and finishes it once the endpoint is back.
func TestReadyzModelEndpointDown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	impl := &flakyEndpoint{Sim: sim}
	impl.down.Store(true)
	nc, err := nats.Connect(b.url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	m := ops.NewMetrics()
	w, err := worker.New(nc, worker.Config{
		Metrics: m, Log: natstest.Quiet(), FetchWait: time.Second,
		Runners: runner.Set{Planner: sim, Implementer: impl, Judge: sim},
	})
	require.NoError(t, err)
	get := serveOps(t, w, m)
	runOwned(t, w)

	after := b.submit(task("wf-endpoint", "T1"))
	code, body := get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "endpoint unreachable")
	// The fetch loop asks before every fetch: once it asked a few times
	// after the task was queued, it has had every chance to fetch it.
	seen := impl.checks.Load()
	require.Eventually(t, func() bool { return impl.checks.Load() >= seen+3 }, 20*time.Second, 5*time.Millisecond)
	require.Zero(t, sim.Calls(subjects.RolePlanner), "no task is fetched while the endpoint is down")
	require.Empty(t, b.events("wf-endpoint"), "nothing happened to the task: it waits in its queue")

	impl.down.Store(false)
	require.Eventually(t, func() bool { return w.CheckReady() == nil }, 20*time.Second, 5*time.Millisecond)
	code, body = get("/readyz")
	require.Equal(t, http.StatusOK, code, body)
	got := b.waitTerminal("wf-endpoint", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got["T1"].EventType)
}
