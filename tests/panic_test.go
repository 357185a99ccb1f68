package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// panicky is a handler middleware that panics outside any runner when it
// handles the task named in handle, and, for the task named in poison,
// panics in Poison too (the path that fails a poisoned task).
type panicky struct {
	next          consumers.Handler
	handle, fails string
}

func taskID(body []byte) string {
	var r struct{ ID string }
	_ = json.Unmarshal(body, &r)
	return r.ID
}

func (p panicky) Handle(ctx context.Context, d consumers.Msg) consumers.Outcome {
	if id := taskID(d.Body); id == p.handle || id == p.fails {
		panic("pipeline bug on " + id)
	}
	return p.next.Handle(ctx, d)
}

func (p panicky) Poison(ctx context.Context, d consumers.Msg, cause error) consumers.Outcome {
	if taskID(d.Body) == p.fails {
		panic("failing path bug")
	}
	return p.next.(consumers.Poisoner).Poison(ctx, d, cause)
}

// A task whose handling panics outside a runner on every delivery fails on
// its last allowed one: one DLQ entry (max_deliveries) and one task_failed.
// When failing it panics too, the request is still copied to the DLQ and
// terminated. The worker stays up and runs the tasks around them.
func TestPanicOutsideRunnerFailsOnlyThatTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	w := b.startWorker(worker.Config{
		Concurrency: 2, Runners: runner.SimSet(sim), Consumer: broker.ConsumerSettings{MaxDeliver: 3},
		Middleware: func(h consumers.Handler) consumers.Handler { return panicky{next: h, handle: "P", fails: "Q"} },
	})
	var reqs []subjects.TaskRequest
	for i := range 3 {
		reqs = append(reqs, task("wf-panic", fmt.Sprintf("A%d", i)))
	}
	reqs = append(reqs, task("wf-panic", "P"), task("wf-panic", "Q"))
	for i := range 3 {
		reqs = append(reqs, task("wf-panic", fmt.Sprintf("B%d", i)))
	}
	after := b.submit(reqs...)
	got := b.waitTerminal("wf-panic", after, 7)
	require.Len(t, got, 7, "six good tasks and P end; Q has no terminal event")
	for id, ev := range got {
		if id == "P" {
			require.Equal(t, subjects.EventTaskFailed, ev.EventType)
			require.Equal(t, string(subjects.ReasonMaxDeliveries), ev.Action)
			require.Contains(t, ev.Error, "panic")
			continue
		}
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
	}

	// Q is copied to the DLQ by the last-resort path; both dead letters are
	// the only ones, one each.
	require.Eventually(t, func() bool { return msgs(b, b.names.DLQStream()) == 2 }, 30*time.Second, 20*time.Millisecond)
	byTask := map[string]int{}
	for _, m := range b.dlq() {
		byTask[m.Header.Get(subjects.HeaderTask)]++
		require.Equal(t, string(subjects.ReasonMaxDeliveries), m.Header.Get(subjects.HeaderReason))
		require.Equal(t, "3", m.Header.Get(subjects.HeaderDeliveries))
		require.Contains(t, m.Header.Get(subjects.HeaderError), "panic")
	}
	require.Equal(t, map[string]int{"P": 1, "Q": 1}, byTask)
	terminal := 0
	for _, ev := range b.events("wf-panic") {
		if ev.TaskID == "P" && ev.EventType.Terminal() {
			terminal++
		}
		require.NotEqual(t, "Q", ev.TaskID, "Q never reached the pipeline")
	}
	require.Equal(t, 1, terminal, "one terminal event for P")

	// Both messages are settled (terminated): the stream is empty.
	require.Eventually(t, func() bool { return msgs(b, b.names.TasksStream()) == 0 }, 30*time.Second, 20*time.Millisecond)
	require.EqualValues(t, 6, w.Consumers()[0].Stats().Panics, "three deliveries each of P and Q")
	require.NoError(t, w.CheckLive())
}

// msgs is how many messages a stream holds, -1 when it cannot be read.
func msgs(b *bundle, stream string) int {
	s, err := b.js.Stream(context.Background(), stream)
	if err != nil {
		return -1
	}
	info, err := s.Info(context.Background())
	if err != nil {
		return -1
	}
	return int(info.State.Msgs)
}
