package tests

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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

// An openai role configured in a file (wrapped in its timeout middleware)
// has its endpoint checked: /readyz is not ready, naming the model and
// endpoint, while the endpoint answers 5xx, and ready once it answers.
func TestReadyzOpenAIEndpointFromConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var down atomic.Bool
	down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the health check sent a key")
		}
		if down.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	set := runnersFromConfig(t, fmt.Sprintf(`roles:
  planner: {runner: sim}
  judge: {runner: sim}
  implementer: {runner: openai, timeout: 1m, openai: {base_url: %q, model: coder}}
`, srv.URL+"/v1"))
	nc, err := nats.Connect(b.url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	w, err := worker.New(nc, worker.Config{Runners: set, Log: natstest.Quiet(), FetchWait: time.Second})
	require.NoError(t, err)
	runOwned(t, w)
	require.Eventually(t, func() bool {
		err := w.CheckReady()
		return err != nil && strings.Contains(err.Error(), "implementer: openai model coder at "+srv.URL+"/v1: endpoint unreachable")
	}, 20*time.Second, 10*time.Millisecond)
	down.Store(false)
	awaitReady(t, w)
}
