package tests

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/subjects"
)

// Scenario: poison tasks (always failing, panicking, hanging) amid good
// ones: the good flow, each poison one ends in the DLQ after its allowed
// deliveries.
func TestFaultPoisonTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	common := []string{"--max-deliver", "2", "--retry-backoff", "50ms", "--role-timeout", "1s", "--concurrency", "4"}
	b.startProc(common...)
	b.startProc(common...)
	var reqs []subjects.TaskRequest
	for i := range 20 {
		reqs = append(reqs, withSim(task("wf-poison", fmt.Sprintf("good-%d", i)), `{"latency_ms": {"implementer": 50}}`))
	}
	reqs = append(reqs,
		withSim(task("wf-poison", "error"), `{"fail": {"role": "implementer", "times": -1}}`),
		withSim(task("wf-poison", "panic"), `{"panic": "judge"}`),
		withSim(task("wf-poison", "hang"), `{"hang": "implementer"}`))
	after := b.submit(reqs...)
	got := b.waitTerminal("wf-poison", after, len(reqs))
	for id, ev := range got {
		switch id {
		case "error", "panic", "hang":
			require.Equal(t, subjects.EventTaskFailed, ev.EventType, id)
			require.Equal(t, string(subjects.ReasonMaxDeliveries), ev.Action, id)
		default:
			require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
		}
	}
	b.quiet("wf-poison", len(reqs))
	reasons := map[string]string{}
	for _, m := range b.dlq() {
		reasons[m.Header.Get(subjects.HeaderTask)] = m.Header.Get(subjects.HeaderReason)
	}
	require.Equal(t, map[string]string{"error": "max_deliveries", "panic": "max_deliveries", "hang": "max_deliveries"}, reasons)
}

// Scenario: steady load with roles at 0.8 of the ack wait across two
// workers: heartbeats keep every claim (zero redeliveries) and neither
// worker runs more roles at once than its pool has slots.
func TestFaultSteadyLoadNoRedeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	common := []string{"--ack-wait", "2s", "--concurrency", "3", "--sim-call-log", log}
	b.startProc(common...)
	b.startProc(common...)
	var reqs []subjects.TaskRequest
	for i := range 12 {
		reqs = append(reqs, withSim(task("wf-steady", fmt.Sprintf("T%d", i)),
			`{"latency_ms": {"planner": 1600, "implementer": 1600, "judge": 1600}}`))
	}
	after := b.submit(reqs...)
	got := b.waitTerminal("wf-steady", after, len(reqs))
	for _, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType)
	}
	b.quiet("wf-steady", len(reqs))
	ci := consumerInfo(t, b)
	require.Zero(t, ci.NumRedelivered, "redeliveries under steady load")
	for _, ev := range b.events("wf-steady") {
		require.NotEqual(t, subjects.EventTaskRetried, ev.EventType)
	}
	perPID := map[int]int64{}
	for _, c := range calls(t, log) {
		perPID[c.PID] = max(perPID[c.PID], c.InFlight)
	}
	require.Len(t, perPID, 2, "both workers took a share")
	for pid, n := range perPID {
		require.LessOrEqual(t, n, int64(3), "worker %d ran %d roles at once", pid, n)
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }() // the test is over
	return l.Addr().(*net.TCPAddr).Port
}

// Scenario: SIGKILL and restart the NATS server under load, on the same
// port and store. Workers reconnect by themselves and every task completes
// exactly once.
func TestFaultServerRestartUnderLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startServer := func() *proc {
		p := spawn(t, "server", "--listen", addr, "--data", dir, "--log-format", "json")
		p.waitStarted(60 * time.Second)
		return p
	}
	srv := startServer()
	b := connectBundle(t, "nats://"+addr)
	common := []string{"--ack-wait", "2s", "--concurrency", "8", "--retry-backoff", "100ms", "--max-deliver", "20"}
	b.startProc(common...)
	b.startProc(common...)

	const n = 200
	var reqs []subjects.TaskRequest
	for i := range n {
		reqs = append(reqs, withSim(task("wf-restart", fmt.Sprintf("T%d", i)), `{"latency_ms": {"implementer": 40}}`))
	}
	after := b.submit(reqs...)
	// Kill the server once a quarter of the tasks are done.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := 0
	require.NoError(t, producer.FollowTerminal(ctx, b.js, b.names, "wf-restart", after, func(producer.Terminal) bool {
		seen++
		return seen < n/4
	}))
	srv.signal(syscall.SIGKILL)
	require.Error(t, srv.wait(30*time.Second))
	startServer()

	got := b.waitTerminal("wf-restart", after, n)
	require.Len(t, got, n)
	for id, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
	}
	b.quiet("wf-restart", n)
}

// Scenario: four workers starting at once on an empty server create exactly
// one of each stream and bucket.
func TestFaultConcurrentStartCreatesOneOfEach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var procs []*proc
	for range 4 {
		procs = append(procs, spawn(t, "serve", "--nats-url", b.url, "--http", "", "--log-format", "json"))
	}
	for _, p := range procs {
		p.waitStarted(60 * time.Second)
	}
	var names []string
	lister := b.js.StreamNames(context.Background())
	for name := range lister.Name() {
		names = append(names, name)
	}
	require.NoError(t, lister.Err())
	sort.Strings(names)
	require.Equal(t, []string{"DROVER_AUDIT", "DROVER_DLQ", "DROVER_LESSONS", "DROVER_LIVE", "DROVER_TASKS", "KV_drover_cache", "KV_drover_spend", "KV_drover_state", "OBJ_drover_blobs"}, names)
	b.oracle()
}

// Scenario: a pre-existing audit stream that allows deletion is refused by
// name, and the worker exits non-zero.
func TestFaultWeakAuditStreamRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: b.names.AuditStream(), Subjects: []string{b.names.AuditWildcard()}, Storage: jetstream.FileStorage,
	})
	require.NoError(t, err)
	p := spawn(t, "serve", "--nats-url", b.url, "--http", "", "--log-format", "json")
	require.Error(t, p.wait(60*time.Second), "the worker accepted a weak audit stream")
	require.Contains(t, p.stderrText(), "deny_delete")
}
