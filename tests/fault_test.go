package tests

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// quiet checks the invariants every fault scenario ends with: each task of
// the workflow has exactly one terminal event, no event ID appears twice,
// and the tasks stream is empty with nothing pending; then the full oracle
// over the whole record (see oracle).
func (b *bundle) quiet(workflow string, tasks int) []subjects.AuditEvent {
	b.t.Helper()
	evs := b.events(workflow)
	ids := map[string]bool{}
	terminal := map[string]int{}
	for _, ev := range evs {
		require.False(b.t, ids[ev.EventID], "event %s twice", ev.EventID)
		ids[ev.EventID] = true
		if ev.EventType.Terminal() {
			terminal[ev.TaskID]++
		}
	}
	require.Len(b.t, terminal, tasks)
	for id, n := range terminal {
		require.Equal(b.t, 1, n, "terminal events of %s", id)
	}
	ctx := context.Background()
	require.EventuallyWithT(b.t, func(c *assert.CollectT) {
		s, err := b.js.Stream(ctx, b.names.TasksStream())
		if !assert.NoError(c, err) {
			return
		}
		info, err := s.Info(ctx)
		if !assert.NoError(c, err) {
			return
		}
		cons, err := b.js.Consumer(ctx, b.names.TasksStream(), b.names.Consumer("default"))
		if !assert.NoError(c, err) {
			return
		}
		ci, err := cons.Info(ctx)
		if !assert.NoError(c, err) {
			return
		}
		assert.Zero(c, info.State.Msgs, "messages")
		assert.Zero(c, ci.NumAckPending, "ack pending")
		assert.Zero(c, ci.NumPending, "pending")
	}, 30*time.Second, 50*time.Millisecond, "tasks stream not empty")
	b.oracle()
	return evs
}

func consumerInfo(t *testing.T, b *bundle) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := b.js.Consumer(context.Background(), b.names.TasksStream(), b.names.Consumer("default"))
	require.NoError(t, err)
	ci, err := c.Info(context.Background())
	require.NoError(t, err)
	return ci
}

// Scenario: SIGKILL a worker mid-role while another runs. The survivor
// takes the task over and completes it (the delay is logged); the planner,
// which finished before the crash, does not run again.
func TestFaultKillMidRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	a := b.startProc("--ack-wait", "2s", "--sim-call-log", log, "--worker-id", "A")
	after := b.submit(withSim(task("wf-kill", "T1"), `{"latency_ms": {"implementer": 3000}}`))
	waitCall(t, log, "T1", subjects.RoleImplementer)
	b.startProc("--ack-wait", "2s", "--sim-call-log", log, "--worker-id", "B")
	killed := time.Now()
	a.signal(syscall.SIGKILL)
	got := b.waitTerminal("wf-kill", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got["T1"].EventType)
	require.Equal(t, "B", got["T1"].Worker)
	done := time.Since(killed)
	cs := calls(t, log)
	var pickedUp time.Time
	for _, c := range cs {
		if c.Role == subjects.RoleImplementer && c.PID != a.cmd.Process.Pid {
			pickedUp = c.Time
		}
	}
	require.False(t, pickedUp.IsZero())
	// The bound: the ack wait, then at most one pull expiry (5s) before the
	// survivor's next fetch, plus a margin for two race-built processes.
	require.Less(t, pickedUp.Sub(killed), 2*time.Second+5*time.Second+2*time.Second, "kill to pick-up")
	t.Logf("recovery: kill to pick-up elsewhere %s, kill to completion %s (ack wait 2s, implementer 3s)",
		pickedUp.Sub(killed).Round(10*time.Millisecond), done.Round(10*time.Millisecond))

	require.Equal(t, 1, countCalls(cs, "T1", subjects.RolePlanner), "planner ran again")
	require.Equal(t, 2, countCalls(cs, "T1", subjects.RoleImplementer))
	require.Equal(t, 1, countCalls(cs, "T1", subjects.RoleJudge))
	evs := b.quiet("wf-kill", 1)
	var types []subjects.EventType
	for _, ev := range evs {
		types = append(types, ev.EventType)
	}
	require.Equal(t, []subjects.EventType{subjects.EventTaskAccepted, subjects.EventPlannerDecision,
		subjects.EventImplementerChange, subjects.EventJudgeVerdict, subjects.EventTaskCompleted}, types)
}

// Scenario: SIGTERM with short work: the worker finishes what it holds and
// exits 0.
func TestFaultSIGTERMDrains(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	a := b.startProc("--grace", "30s", "--sim-call-log", log)
	var reqs []subjects.TaskRequest
	for _, id := range []string{"T1", "T2", "T3"} {
		reqs = append(reqs, withSim(task("wf-term", id), `{"latency_ms": {"implementer": 300}}`))
	}
	after := b.submit(reqs...)
	for _, id := range []string{"T1", "T2", "T3"} {
		waitCall(t, log, id, subjects.RoleImplementer)
	}
	a.signal(syscall.SIGTERM)
	require.NoError(t, a.wait(60*time.Second), "exit status after SIGTERM")
	got := b.waitTerminal("wf-term", after, 3)
	for _, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType)
	}
	b.quiet("wf-term", 3)
}

// Scenario: SIGTERM with work longer than the grace period: the task is
// handed back at once (not after the ack wait, here 5 minutes) and finished
// by another worker.
func TestFaultSIGTERMHandsBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	a := b.startProc("--grace", "500ms", "--ack-wait", "5m", "--sim-call-log", log, "--worker-id", "A")
	after := b.submit(withSim(task("wf-handback", "T1"), `{"latency_ms": {"implementer": 2000}}`))
	waitCall(t, log, "T1", subjects.RoleImplementer)
	b.startProc("--ack-wait", "5m", "--sim-call-log", log, "--worker-id", "B")
	a.signal(syscall.SIGTERM)
	signalled := time.Now()
	require.NoError(t, a.wait(60*time.Second), "exit status after SIGTERM")
	exit := time.Since(signalled)
	require.Less(t, exit, 500*time.Millisecond+3*time.Second, "exit within the grace period and a margin")
	got := b.waitTerminal("wf-handback", after, 1)
	t.Logf("SIGTERM past the grace: exit %s after the signal (grace 500ms); task handed back %s after it (ack wait 5m)",
		exit.Round(10*time.Millisecond), time.Since(signalled).Round(10*time.Millisecond))
	require.Equal(t, subjects.EventTaskCompleted, got["T1"].EventType)
	require.Equal(t, "B", got["T1"].Worker)
	require.Equal(t, 1, countCalls(calls(t, log), "T1", subjects.RolePlanner))
	b.quiet("wf-handback", 1)
}
