package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// TestMain fails the package if any test leaves a goroutine behind: a
// worker that has drained owns nothing that still runs.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A worker runs tasks, then drains on cancel: Run returns nil, in-flight
// work finishes within the grace period, and nothing is left running.
func TestWorkerDrainsAndLeavesNothingBehind(t *testing.T) {
	nc, js := natstest.Connect(t, natstest.Server(t, natstest.Sync(time.Second)).ClientURL())
	names := subjects.MustNames(subjects.DefaultPrefix)

	sim := runner.NewSim(runner.SimOptions{})
	w, err := worker.New(nc, worker.Config{
		Concurrency: 4, Runners: runner.SimSet(sim), FetchWait: 200 * time.Millisecond,
		Grace: 30 * time.Second, Log: natstest.Quiet(),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case <-w.Started():
	case err := <-done:
		t.Fatalf("worker stopped at start: %v", err)
	}

	after, err := producer.AuditLastSeq(ctx, js, names)
	require.NoError(t, err)
	for i := range 8 {
		req := subjects.TaskRequest{Workflow: "wf-drain", ID: fmt.Sprintf("T%d", i), Scope: "s",
			Metadata: map[string]json.RawMessage{"sim": json.RawMessage(`{"latency_ms": {"implementer": 200}}`)}}
		_, err := producer.Publish(ctx, js, names, subjects.DefaultQueue, req)
		require.NoError(t, err)
	}
	// Stop while tasks run: they finish within the grace period.
	require.Eventually(t, func() bool { return sim.Calls(subjects.RoleImplementer) > 0 }, 30*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, natstest.Recv(t, done, 30*time.Second))

	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer fcancel()
	started := int(sim.Calls(subjects.RoleImplementer))
	completed := 0
	require.NoError(t, producer.FollowTerminal(fctx, js, names, "wf-drain", after, func(tm producer.Terminal) bool {
		if tm.Event.EventType == subjects.EventTaskCompleted {
			completed++
		}
		return completed < started
	}))
	require.Equal(t, started, completed, "every task that reached its implementer finished")
}
