package tests

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// Row 19: retries do not starve good work. A provider brownout (every
// request of a backlog failing its planner twice) in a window of two
// (max ack pending 2): each failure commits task_retried, schedules the
// request again for a second later and acks this one, so the good tasks
// submitted behind the backlog run at once and complete before any failing
// task does. A task that never stops failing still ends after its MaxDeliver
// tries, counted in its state across the scheduled requests.
func TestFaultRetriesLeaveTheWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	w := b.startWorker(worker.Config{
		Concurrency: 2,
		Runners:     runner.SimSet(sim),
		Watchdog:    200 * time.Millisecond,
		Consumer:    broker.ConsumerSettings{MaxAckPending: 2, MaxDeliver: 3},
		Pipeline:    pipeline.Config{RetryBase: time.Second, RetryMax: time.Second},
	})
	const wf, failing, good = "wf-brownout", 6, 4
	var reqs []subjects.TaskRequest
	for i := range failing {
		reqs = append(reqs, withSim(task(wf, fmt.Sprintf("F%d", i)), `{"fail": {"role": "planner", "times": 2}}`))
	}
	reqs = append(reqs, withSim(task(wf, "POISON"), `{"fail": {"role": "planner", "times": -1}}`))
	for i := range good {
		reqs = append(reqs, task(wf, fmt.Sprintf("G%d", i)))
	}
	start := time.Now()
	after := b.submit(reqs...)
	got := b.waitTerminal(wf, after, len(reqs))
	t.Logf("all %d tasks ended %s after the submission", len(reqs), time.Since(start).Round(time.Millisecond))

	for _, r := range reqs {
		want := subjects.EventTaskCompleted
		if r.ID == "POISON" {
			want = subjects.EventTaskFailed
		}
		require.Equal(t, want, got[r.ID].EventType, r.ID)
	}
	require.Equal(t, string(subjects.ReasonMaxDeliveries), got["POISON"].Action)

	var goodDone, firstFailingDone, retries = 0, -1, map[string]int{}
	for i, ev := range b.events(wf) {
		switch {
		case ev.EventType == subjects.EventTaskRetried:
			retries[ev.TaskID]++
		case ev.EventType == subjects.EventTaskCompleted && ev.TaskID[0] == 'G':
			goodDone = i
			t.Logf("%s completed %s after the submission", ev.TaskID, ev.Timestamp.Sub(start).Round(time.Millisecond))
		case ev.EventType == subjects.EventTaskCompleted && firstFailingDone < 0:
			firstFailingDone = i
		}
	}
	require.Less(t, goodDone, firstFailingDone, "every good task completed before any failing one")
	for i := range failing {
		require.Equal(t, 2, retries[fmt.Sprintf("F%d", i)], "F%d", i)
	}
	require.Equal(t, 2, retries["POISON"], "MaxDeliver 3: three tries, two retries")
	require.EqualValues(t, 3, sim.Calls(subjects.RolePlanner)-3*failing-good, "the poison task's three tries")
	require.Zero(t, w.Consumers()[0].Stats().WatchdogStalls)
	require.True(t, slices.ContainsFunc(b.dlq(), func(m *jetstream.RawStreamMsg) bool {
		return m.Header.Get(subjects.HeaderReason) == string(subjects.ReasonMaxDeliveries)
	}))
	b.oracle()
}
