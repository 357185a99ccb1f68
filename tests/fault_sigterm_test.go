package tests

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// Row 3: SIGTERM while a task runs and the worker waits for more. The
// worker pulls nothing after the signal: requests published while it
// drains are not delivered to it (the consumer's delivered count is
// frozen, nothing waits out an ack wait in a dead pull), it finishes what
// it holds, exits 0 within the grace period, and the next worker takes the
// rest at once.
func TestFaultSIGTERMNoPullAfterSignal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	const grace = 30 * time.Second
	a := b.startProc("--concurrency", "4", "--grace", grace.String(), "--ack-wait", "5m", "--sim-call-log", log, "--worker-id", "A")
	after := b.submit(withSim(task("wf-nopull", "T0"), `{"latency_ms": {"implementer": 2000}}`))
	waitCall(t, log, "T0", subjects.RoleImplementer)
	a.signal(syscall.SIGTERM)
	signalled := time.Now()
	require.Eventually(t, func() bool { return a.logged("draining") }, 30*time.Second, 10*time.Millisecond)
	frozen := consumerInfo(t, b).Delivered.Consumer
	require.EqualValues(t, 1, frozen, "delivered at the signal")

	var reqs []subjects.TaskRequest
	for i := range 3 {
		reqs = append(reqs, task("wf-nopull", fmt.Sprintf("U%d", i)))
	}
	b.submit(reqs...)
	require.NoError(t, a.wait(grace+10*time.Second), "exit status after SIGTERM")
	exit := time.Since(signalled)
	require.Less(t, exit, grace, "exit within the grace period")
	ci := consumerInfo(t, b)
	require.Equal(t, frozen, ci.Delivered.Consumer, "a delivery after the signal")
	require.Zero(t, ci.NumAckPending, "a request waits out the ack wait in a dead pull")
	require.EqualValues(t, 3, ci.NumPending)
	t.Logf("SIGTERM to exit %s (grace %s, 2s task in flight)", exit.Round(10*time.Millisecond), grace)

	b.startProc("--ack-wait", "5m", "--sim-call-log", log, "--worker-id", "B")
	got := b.waitTerminal("wf-nopull", after, 4)
	for id, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
	}
	require.Equal(t, "A", got["T0"].Worker)
	b.quiet("wf-nopull", 4)
}
