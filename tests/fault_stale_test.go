package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Scenario: SIGSTOP a worker past the ack wait; the other takes the task
// over; SIGCONT the stale one while the new owner still runs. The stale
// worker writes nothing and sends nothing; the task completes once.
func TestFaultStaleWorkerWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	a := b.startProc("--ack-wait", "2s", "--sim-call-log", log, "--worker-id", "A")
	after := b.submit(withSim(task("wf-stale", "T1"), `{"latency_ms": {"implementer": 3000}}`))
	waitCall(t, log, "T1", subjects.RoleImplementer)
	a.signal(syscall.SIGSTOP)
	b.startProc("--ack-wait", "2s", "--sim-call-log", log, "--worker-id", "B")
	// B has claimed the task once it runs the implementer.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cs, err := readCalls(log)
		if assert.NoError(c, err) {
			assert.Equal(c, 2, countCalls(cs, "T1", subjects.RoleImplementer))
		}
	}, 60*time.Second, 20*time.Millisecond)
	a.signal(syscall.SIGCONT)
	require.Eventually(t, func() bool { return a.logged("claim lost; leaving the message to its new owner") },
		60*time.Second, 20*time.Millisecond, "the stale worker did not give up its claim")

	got := b.waitTerminal("wf-stale", after, 1)
	require.Equal(t, "B", got["T1"].Worker)
	for _, ev := range b.quiet("wf-stale", 1) {
		if ev.EventType != subjects.EventTaskAccepted && ev.EventType != subjects.EventPlannerDecision {
			require.Equal(t, "B", ev.Worker, "event %s written by the stale worker", ev.EventID)
		}
	}
	require.Equal(t, 1, countCalls(calls(t, log), "T1", subjects.RoleJudge))
}

// Scenario: a redelivery long after the duplicate window. Worker A stops
// itself right after its first state write, before publishing that write's
// events; B takes over and publishes them; once the (1s) duplicate window
// has passed, A resumes and tries to publish the same events. The
// expected-last-subject-sequence fence refuses them: no event ID twice.
func TestFaultRedeliveryAfterDuplicateWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	common := []string{"--ack-wait", "2s", "--duplicate-window", "1s", "--sim-call-log", log}
	a := b.startProc(append(common, "--worker-id", "A", "--fault-stop-after-commits", "1")...)
	after := b.submit(task("wf-window", "T1"))
	require.Eventually(t, a.stopped, 60*time.Second, 10*time.Millisecond, "A did not stop after its first commit")
	b.startProc(append(common, "--worker-id", "B")...)
	got := b.waitTerminal("wf-window", after, 1)
	require.Equal(t, "B", got["T1"].Worker)

	waitDuplicateWindow(t, b, time.Second)
	a.signal(syscall.SIGCONT)
	require.Eventually(t, func() bool { return a.logged("claim lost; leaving the message to its new owner") },
		60*time.Second, 20*time.Millisecond, "the resumed worker did not give up its claim:\n%s", a.stderrText())
	evs := b.quiet("wf-window", 1)
	require.Len(t, evs, 5)
}

// waitDuplicateWindow returns once a duplicate window of d has passed since
// it was called: it asks the server, with a probe message on a scratch
// stream with the same window, instead of sleeping.
func waitDuplicateWindow(t *testing.T, b *bundle, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("PROBE_%d", time.Now().UnixNano())
	_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"probe." + name}, Duplicates: d, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	defer func() { _ = b.js.DeleteStream(ctx, name) }()
	msg := func() *nats.Msg {
		m := nats.NewMsg("probe." + name)
		m.Header.Set(jetstream.MsgIDHeader, "probe")
		return m
	}
	_, err = b.js.PublishMsg(ctx, msg())
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ack, err := b.js.PublishMsg(ctx, msg())
		if assert.NoError(c, err) {
			assert.False(c, ack.Duplicate, "duplicate")
		}
	}, 30*time.Second, 50*time.Millisecond)
}

// Scenario: SIGKILL the worker during a task's last allowed delivery. The
// server's extra delivery ends it as task_failed (max_deliveries) with
// exactly one DLQ entry, without running the role again.
func TestFaultKillOnLastDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	common := []string{"--ack-wait", "2s", "--max-deliver", "2", "--retry-backoff", "100ms", "--sim-call-log", log}
	a := b.startProc(append(common, "--worker-id", "A")...)
	after := b.submit(withSim(task("wf-last", "T1"), `{"latency_ms": {"implementer": 1500}, "fail": {"role": "implementer", "times": 1}}`))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cs, err := readCalls(log)
		if !assert.NoError(ct, err) {
			return
		}
		assert.True(ct, slices.ContainsFunc(cs, func(c runner.CallLogLine) bool {
			return c.Role == subjects.RoleImplementer && c.Try == 2
		}))
	}, 60*time.Second, 20*time.Millisecond, "the last allowed delivery did not start")
	a.signal(syscall.SIGKILL)
	b.startProc(append(common, "--worker-id", "B")...)

	got := b.waitTerminal("wf-last", after, 1)
	require.Equal(t, subjects.EventTaskFailed, got["T1"].EventType)
	require.Equal(t, string(subjects.ReasonMaxDeliveries), got["T1"].Action)
	require.Equal(t, 2, countCalls(calls(t, log), "T1", subjects.RoleImplementer), "the extra delivery ran the role")
	b.quiet("wf-last", 1)
	dlq := b.dlq()
	require.Len(t, dlq, 1)
	require.Equal(t, "max_deliveries", dlq[0].Header.Get(subjects.HeaderReason))
	// The retry's request: its first delivery ran try 2, the killed one;
	// its second is the extra one (try 3 of 2).
	require.Equal(t, "2", dlq[0].Header.Get(subjects.HeaderDeliveries))
}
