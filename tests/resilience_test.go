package tests

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// A consumer deleted under a running worker is recreated, and the queue
// keeps flowing without a process restart.
func TestConsumerDeletedIsRecreated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	b.startWorker(worker.Config{Concurrency: 2, Runners: runner.SimSet(sim), Watchdog: 200 * time.Millisecond})
	after := b.submit(task("wf-del", "T1"))
	b.waitTerminal("wf-del", after, 1)

	require.NoError(t, b.js.DeleteConsumer(context.Background(), b.names.TasksStream(), b.names.Consumer("default")))
	after = b.submit(task("wf-del", "T2"))
	got := b.waitTerminal("wf-del", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got["T2"].EventType)
	b.oracle()
}

// The watchdog names a queue whose window is full of tasks waiting out a
// retry delay, instead of leaving operators to guess why nothing runs.
func TestWatchdogReportsMaxAckPending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	logs := &cliBuffer{}
	sim := runner.NewSim(runner.SimOptions{})
	w := b.startWorker(worker.Config{
		Concurrency: 2,
		Runners:     runner.SimSet(sim),
		Log:         slog.New(slog.NewTextHandler(logs, nil)),
		Watchdog:    200 * time.Millisecond,
		Consumer:    broker.ConsumerSettings{MaxAckPending: 2, MaxDeliver: 5},
		Pipeline:    pipeline.Config{RetryBase: time.Minute, RetryMax: time.Minute},
	})
	failing := `{"fail": {"role": "planner", "times": 1}}`
	b.submit(withSim(task("wf-full", "F1"), failing), withSim(task("wf-full", "F2"), failing), task("wf-full", "OK"))
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "max ack pending reached") }, 30*time.Second, 20*time.Millisecond, "logs:\n%s", logs.String())
	require.EqualValues(t, 2, sim.Calls(subjects.RolePlanner), "the good task waited behind the retries")
	require.Zero(t, w.Consumers()[0].Stats().WatchdogStalls, "a full window is not a stall")
}
