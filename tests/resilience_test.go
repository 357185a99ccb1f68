package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
