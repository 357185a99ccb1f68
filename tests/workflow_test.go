package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/workflow"
	"github.com/droverhq/drover/subjects"
)

// control sends a control request as any client would.
func (b *bundle) control(wf, action, reason string) workflow.Reply {
	b.t.Helper()
	body, _ := json.Marshal(map[string]string{"reason": reason})
	msg, err := b.nc.Request(b.names.CtlSubject(wf, action), body, 30*time.Second)
	require.NoError(b.t, err)
	var r workflow.Reply
	require.NoError(b.t, json.Unmarshal(msg.Data, &r))
	require.Empty(b.t, r.Error)
	return r
}

// status reads a workflow's status from drover_state.
func (b *bundle) status(wf string) workflow.Status {
	b.t.Helper()
	kv, err := b.js.KeyValue(context.Background(), b.names.StateBucket())
	require.NoError(b.t, err)
	st, err := workflow.GetStatus(context.Background(), kv, wf)
	require.NoError(b.t, err)
	return st
}

func (b *bundle) waitParked(wf string, n int) {
	b.t.Helper()
	require.EventuallyWithT(b.t, func(c *assert.CollectT) {
		kv, err := b.js.KeyValue(context.Background(), b.names.StateBucket())
		if !assert.NoError(c, err) {
			return
		}
		st, err := workflow.GetStatus(context.Background(), kv, wf)
		if assert.NoError(c, err) {
			assert.Equal(c, n, st.Counts[subjects.StatePaused])
		}
	}, 60*time.Second, 20*time.Millisecond, "%d tasks of %s parked", n, wf)
}

// Pause a running workflow, SIGKILL and restart the worker, resume: no
// finished role runs again, paused tasks start no role, every task
// completes.
func TestWorkflowPauseKillResume(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	w1 := b.startProc("--ack-wait", "2s", "--sim-call-log", log, "--concurrency", "8")
	var reqs []subjects.TaskRequest
	for i := range 6 {
		reqs = append(reqs, withSim(task("wf-pause", fmt.Sprintf("T%d", i)), `{"latency_ms": {"implementer": 1000}}`))
	}
	after := b.submit(reqs...)
	for i := range 6 {
		waitCall(t, log, fmt.Sprintf("T%d", i), subjects.RoleImplementer)
	}
	r := b.control("wf-pause", workflow.ActionPause, "maintenance")
	require.Equal(t, subjects.StatePaused, r.State)
	b.waitParked("wf-pause", 6)
	for _, task := range b.status("wf-pause").Tasks {
		require.Equal(t, string(subjects.RoleJudge), task.Stage, "%s parked after its implementer", task.Task)
	}
	before := len(calls(t, log))

	w1.signal(syscall.SIGKILL)
	_ = w1.wait(30 * time.Second) // killed: its exit error is expected
	b.startProc("--ack-wait", "2s", "--sim-call-log", log, "--concurrency", "8")
	// A submission to the paused workflow is accepted and parked, unrun.
	b.submit(task("wf-pause", "late"))
	b.waitParked("wf-pause", 7)
	require.Len(t, calls(t, log), before, "a paused task started a role")

	r = b.control("wf-pause", workflow.ActionResume, "")
	require.Equal(t, subjects.StateRunning, r.State)
	got := b.waitTerminal("wf-pause", after, 7)
	for id, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
	}
	cs := calls(t, log)
	for i := range 6 {
		id := fmt.Sprintf("T%d", i)
		for _, role := range subjects.Roles {
			require.Equal(t, 1, countCalls(cs, id, role), "%s %s ran again", id, role)
		}
	}
	evs := b.events("wf-pause")
	types := map[subjects.EventType]int{}
	for _, ev := range evs {
		types[ev.EventType]++
	}
	require.Equal(t, 1, types[subjects.EventWorkflowPaused])
	require.Equal(t, 1, types[subjects.EventWorkflowResumed])
	require.Equal(t, 7, types[subjects.EventTaskCompleted])
}

// Cancel ends parked tasks with task_cancelled; a later submission is
// rejected; a cancelled workflow cannot be resumed.
func TestWorkflowCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	after := b.submit(
		withSim(task("wf-cancel", "slow"), `{"latency_ms": {"planner": 300, "implementer": 300}}`),
		withSim(task("wf-cancel", "parked"), `{"latency_ms": {"planner": 300}}`))
	require.Eventually(t, func() bool { return sim.Calls(subjects.RolePlanner) == 2 }, 30*time.Second, 10*time.Millisecond)
	b.control("wf-cancel", workflow.ActionPause, "")
	b.waitParked("wf-cancel", 2)
	r := b.control("wf-cancel", workflow.ActionCancel, "not needed")
	require.Equal(t, subjects.StateCancelled, r.State)
	got := b.waitTerminal("wf-cancel", after, 2)
	for id, ev := range got {
		require.Equal(t, subjects.EventTaskCancelled, ev.EventType, id)
	}

	late := b.submit(task("wf-cancel", "late"))
	rej := b.waitTerminal("wf-cancel", late, 1)
	require.Equal(t, subjects.EventTaskRejected, rej["late"].EventType)
	require.Equal(t, string(subjects.ReasonWorkflowCancelled), rej["late"].Action)

	msg, err := b.nc.Request(b.names.CtlSubject("wf-cancel", workflow.ActionResume), nil, 30*time.Second)
	require.NoError(t, err)
	require.Contains(t, string(msg.Data), "cancelled")
	b.quiet("wf-cancel", 3)
}
