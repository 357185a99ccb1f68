package tests

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// Row 16: a worker is killed between storing a bad request's DLQ entry
// and writing its task_rejected (and Term). The next delivery, on another
// worker, stores the entry again under the same Nats-Msg-Id, so the DLQ
// still holds one entry, and writes the one task_rejected.
func TestFaultKillBetweenDLQAndTerm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.startProc("--ack-wait", "2s", "--worker-id", "A", "--fault-stop-after-dlq", "1")
	seq := b.publishRaw([]byte(`{"workflow":"wf-dlqkill","id":"T1",`))
	require.Eventually(t, a.stopped, 30*time.Second, 10*time.Millisecond, "the worker did not stop after its DLQ entry")
	entries := dlqBySeq(t, b.dlq())
	require.Len(t, entries, 1, "the entry is stored")
	require.Equal(t, "1", entries[seq].Header.Get(subjects.HeaderDeliveries))
	require.Empty(t, b.events(""), "no task_rejected yet: %s", a.stderrText())
	a.signal(syscall.SIGKILL)
	killed := time.Now()

	b.startProc("--ack-wait", "2s", "--worker-id", "B")
	after := b.submit(task("wf-dlqkill", "good"))
	rejected := b.waitRejected(1)
	recovered := time.Since(killed)
	require.Contains(t, rejected, seq)
	require.Equal(t, "B", rejected[seq].Event.Worker)
	require.Equal(t, string(subjects.ReasonInvalidJSON), rejected[seq].Event.Action)
	require.Less(t, recovered, 2*time.Second+5*time.Second+10*time.Second, "ack wait, pull expiry and the new worker's start")
	require.Len(t, dlqBySeq(t, b.dlq()), 1, "still one DLQ entry")
	require.Equal(t, subjects.EventTaskCompleted, b.waitTerminal("wf-dlqkill", after, 1)["good"].EventType)
	t.Logf("kill between DLQ entry and Term: rejected by the next worker %s after the kill", recovered.Round(10*time.Millisecond))
	b.oracle()
}
