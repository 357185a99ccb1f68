package tests

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

func TestTasksFlowEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	const n = 50
	var reqs []subjects.TaskRequest
	for i := range n {
		reqs = append(reqs, task("wf-e2e", fmt.Sprintf("T%d.1", i)))
	}
	after := b.submit(reqs...)
	got := b.waitTerminal("wf-e2e", after, n)
	require.Len(t, got, n)
	for _, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType)
	}
	evs := b.events("wf-e2e")
	ids := map[string]bool{}
	perTask := map[string][]subjects.EventType{}
	for _, ev := range evs {
		require.False(t, ids[ev.EventID], "duplicate event %s", ev.EventID)
		ids[ev.EventID] = true
		perTask[ev.TaskID] = append(perTask[ev.TaskID], ev.EventType)
	}
	for id, types := range perTask {
		require.Equal(t, []subjects.EventType{subjects.EventTaskAccepted, subjects.EventPlannerDecision,
			subjects.EventImplementerChange, subjects.EventJudgeVerdict, subjects.EventTaskCompleted}, types, id)
	}
	require.EqualValues(t, 3*n, sim.TotalCalls())
	require.LessOrEqual(t, sim.MaxConcurrent(), int64(4))
}

func TestJudgeLoopAndMaxAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	loop := withSim(task("wf-loop", "loop"), `{"judge_rejects": 2}`)
	loop.MaxAttempts = 3
	fail := withSim(task("wf-loop", "fail"), `{"judge_rejects": 5}`)
	fail.MaxAttempts = 2
	after := b.submit(loop, fail)
	got := b.waitTerminal("wf-loop", after, 2)
	require.Equal(t, subjects.EventTaskCompleted, got["loop"].EventType)
	require.Equal(t, subjects.EventTaskFailed, got["fail"].EventType)
	require.Equal(t, string(subjects.ReasonMaxAttempts), got["fail"].Action)

	var verdicts []string
	for _, ev := range b.events("wf-loop") {
		if ev.TaskID == "loop" && ev.EventType == subjects.EventJudgeVerdict {
			verdicts = append(verdicts, fmt.Sprintf("%d:%s", ev.Attempt, ev.Action))
		}
	}
	require.Equal(t, []string{"1:reject", "2:reject", "3:approve"}, verdicts)

	dlq := b.dlq()
	require.Len(t, dlq, 1)
	require.Equal(t, "max_attempts", dlq[0].Header.Get(subjects.HeaderReason))
	require.Equal(t, "fail", dlq[0].Header.Get(subjects.HeaderTask))
	require.Equal(t, "1", dlq[0].Header.Get(subjects.HeaderContract))
}

func TestDuplicateSubmissionRunsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	r := task("wf-dup", "T1")
	after := b.submit(r, r, r)
	b.waitTerminal("wf-dup", after, 1)
	require.EqualValues(t, 3, sim.TotalCalls())
	s, err := b.js.Stream(t.Context(), b.names.TasksStream())
	require.NoError(t, err)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 1, info.State.LastSeq, "the duplicates were stored once")
}

func TestRerunUnderNewWorkflowIsServedFromCache(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	board := func(wf string) []subjects.TaskRequest {
		var out []subjects.TaskRequest
		for i := range 10 {
			out = append(out, withSim(task(wf, fmt.Sprintf("T%d", i)), `{"judge_rejects": 1}`))
		}
		return out
	}
	after := b.submit(board("run-1")...)
	b.waitTerminal("run-1", after, 10)
	calls := sim.TotalCalls()
	require.EqualValues(t, 10*5, calls) // planner, 2 implementer, 2 judge

	after = b.submit(board("run-2")...)
	got := b.waitTerminal("run-2", after, 10)
	require.Equal(t, calls, sim.TotalCalls(), "no runner call on the re-run")
	for _, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType)
	}
	for _, ev := range b.events("run-2") {
		if ev.Actor != subjects.ActorSystem {
			require.True(t, ev.Cached, ev.EventID)
		}
	}
}

// A fully cached task makes one state write: the planner's hit rides on
// the write that creates the state, which carries every event in the
// contract's order; a cold task makes three (the plan, the implementer's
// change before the judge runs, the verdict).
func TestFullyCachedTaskWritesItsStateOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	stateStream, err := b.js.Stream(t.Context(), "KV_"+b.names.StateBucket())
	require.NoError(t, err)
	writes := func(run func()) uint64 {
		before, err := stateStream.Info(t.Context())
		require.NoError(t, err)
		run()
		after, err := stateStream.Info(t.Context())
		require.NoError(t, err)
		return after.State.LastSeq - before.State.LastSeq
	}
	board := func(wf string) []subjects.TaskRequest {
		var out []subjects.TaskRequest
		for i := range 10 {
			out = append(out, task(wf, fmt.Sprintf("T%d", i)))
		}
		return out
	}
	cold := writes(func() { b.waitTerminal("cold", b.submit(board("cold")...), 10) })
	calls := sim.TotalCalls()
	cached := writes(func() { b.waitTerminal("warm", b.submit(board("warm")...), 10) })
	require.Equal(t, calls, sim.TotalCalls(), "no runner call on the re-run")
	require.EqualValues(t, 30, cold, "a cold task: the plan, the change, the verdict")
	require.EqualValues(t, 10, cached, "a cached task: one write")

	order := []subjects.EventType{subjects.EventTaskAccepted, subjects.EventPlannerDecision,
		subjects.EventImplementerChange, subjects.EventJudgeVerdict, subjects.EventTaskCompleted}
	byTask := map[string][]subjects.EventType{}
	for _, ev := range b.events("warm") {
		byTask[ev.TaskID] = append(byTask[ev.TaskID], ev.EventType)
		if ev.Actor != subjects.ActorSystem {
			require.True(t, ev.Cached, ev.EventID)
		}
	}
	require.Len(t, byTask, 10)
	for id, got := range byTask {
		require.Equal(t, order, got, id)
	}
}
