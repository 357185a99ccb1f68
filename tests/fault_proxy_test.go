package tests

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/cli"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
	"github.com/droverhq/drover/tests/faultproxy"
)

// proxy starts a fault proxy in front of the bundle's server, closed at
// test end.
func (b *bundle) proxy() *faultproxy.Proxy {
	b.t.Helper()
	p, err := faultproxy.Start(strings.TrimPrefix(b.url, "nats://"))
	require.NoError(b.t, err)
	b.t.Cleanup(p.Close)
	return p
}

// taskMsgs is how many requests the tasks stream holds.
func (b *bundle) taskMsgs() uint64 {
	b.t.Helper()
	s, err := b.js.Stream(context.Background(), b.names.TasksStream())
	require.NoError(b.t, err)
	info, err := s.Info(context.Background())
	require.NoError(b.t, err)
	return info.State.Msgs
}

// lostPubAck makes the proxy forward the next publish to the default queue
// and drop what the server sends back, waits until the server has stored
// it, and heals (cutting the connection that lost its reply).
func (b *bundle) lostPubAck(p *faultproxy.Proxy, stored func() bool) {
	b.t.Helper()
	require.Eventually(b.t, func() bool { return p.Dropped() > 0 && stored() }, 30*time.Second, 10*time.Millisecond,
		"the publish was not forwarded, or its reply not dropped")
	p.Heal()
}

// Row 6: the PubAck of a submitted request is lost on the way back. The
// producer package sends it again with the same Nats-Msg-Id and reports the
// server's answer (a duplicate: stored once), never a silent timeout; the
// task runs once.
func TestFaultLostPubAckProducerRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.proxy()
	nc, err := nats.Connect(p.URL(), nats.ReconnectWait(100*time.Millisecond), nats.MaxReconnects(-1))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 2) // straight to the server, not through the proxy
	ctx := context.Background()
	after, err := producer.AuditLastSeq(ctx, js, b.names)
	require.NoError(t, err)

	p.DropRepliesAfter([]byte("PUB " + b.names.TaskSubject("default") + " "))
	type result struct {
		sub producer.Submitted
		err error
	}
	done := make(chan result, 1)
	began := time.Now()
	go func() {
		sub, err := producer.Publish(ctx, js, b.names, "default", task("wf-puback", "T1"))
		done <- result{sub, err}
	}()
	b.lostPubAck(p, func() bool { return b.taskMsgs() == 1 || sim.Calls(subjects.RolePlanner) > 0 })
	r := natstest.Recv(t, done, 90*time.Second)
	require.NoError(t, r.err, "the producer reports the server's answer, not a timeout")
	require.True(t, r.sub.Duplicate, "the retry is recognised as the stored request")
	require.EqualValues(t, 1, r.sub.Seq, "one stream message")
	t.Logf("lost PubAck: answered %s after the first publish", time.Since(began).Round(10*time.Millisecond))

	got := b.waitTerminal("wf-puback", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got["T1"].EventType)
	require.EqualValues(t, 1, sim.Calls(subjects.RolePlanner), "one run")
	b.quiet("wf-puback", 1)
}

// Row 6 through the command line: `drover submit` whose PubAck is lost
// exits 0 and says the request was stored once.
func TestFaultLostPubAckSubmitRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.proxy()
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 2)
	after := b.submit() // nothing: the audit sequence before the task

	p.DropRepliesAfter([]byte("PUB " + b.names.TaskSubject("default") + " "))
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var stdout, stderr cliBuffer
		code := cli.Execute(ctx, []string{"--nats-url", p.URL(), "--log-format", "text", "--log-level", "warn",
			"submit", "--workflow", "wf-submit", "--id", "T1", "--scope", "do it"}, &stdout, &stderr)
		done <- result{code, stdout.String(), stderr.String()}
	}()
	b.lostPubAck(p, func() bool { return b.taskMsgs() == 1 || sim.Calls(subjects.RolePlanner) > 0 })
	r := natstest.Recv(t, done, 90*time.Second)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stderr, "duplicate: already submitted, stored once")

	got := b.waitTerminal("wf-submit", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got["T1"].EventType)
	require.EqualValues(t, 1, sim.Calls(subjects.RolePlanner), "one run")
	b.quiet("wf-submit", 1)
}

// Row 7: the worker's ack is lost after the task's last event: the proxy
// holds everything worker A sends after its task_completed. After the ack
// wait the request goes to worker B, which finds the task completed and
// acks it without a runner call and without a second event. A's late ack,
// once healed, does no harm.
func TestFaultLostAckAfterCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.proxy()
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	b.startProc("--ack-wait", "2s", "--sim-call-log", log, "--worker-id", "A", "--nats-url", p.URL())
	p.BlackholeUpAfter([]byte(b.names.AuditSubject("wf-acklost", "T1", subjects.ActorSystem, subjects.EventTaskCompleted) + " "))
	after := b.submit(task("wf-acklost", "T1"))
	got := b.waitTerminal("wf-acklost", after, 1)
	require.Equal(t, "A", got["T1"].Worker)
	held := time.Now()

	b.startProc("--ack-wait", "2s", "--sim-call-log", log, "--worker-id", "B")
	b.drained(context.Background())
	settled := time.Since(held)
	require.GreaterOrEqual(t, consumerInfo(t, b).Delivered.Consumer, uint64(2), "the request was delivered again")
	p.Heal()
	t.Logf("lost ack: settled by the other worker %s after the task_completed (ack wait 2s)", settled.Round(10*time.Millisecond))
	require.Less(t, settled, 2*time.Second+5*time.Second, "within the ack wait plus the pull expiry")

	cs := calls(t, log)
	for _, role := range []subjects.Role{subjects.RolePlanner, subjects.RoleImplementer, subjects.RoleJudge} {
		require.Equal(t, 1, countCalls(cs, "T1", role), "%s runs once", role)
	}
	b.quiet("wf-acklost", 1)
}

// Row 12: worker A is cut off from the server (both directions, new
// connections refused) for longer than the ack wait while it runs a task.
// Worker B takes the task over and completes it; A's late result is fenced
// out. After healing, A pulls again without a process restart: with B
// gone, A runs the next task.
func TestFaultPartitionedWorkerPullsAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.proxy()
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	a := b.startProc("--ack-wait", "2s", "--sim-call-log", log, "--worker-id", "A", "--nats-url", p.URL())
	after := b.submit(withSim(task("wf-part", "T1"), `{"latency_ms": {"implementer": 3000}}`))
	waitCall(t, log, "T1", subjects.RoleImplementer)
	wb := b.startProc("--ack-wait", "2s", "--sim-call-log", log, "--worker-id", "B")
	p.Cut()
	cut := time.Now()
	got := b.waitTerminal("wf-part", after, 1)
	takeover := time.Since(cut)
	require.Equal(t, subjects.EventTaskCompleted, got["T1"].EventType)
	require.Equal(t, "B", got["T1"].Worker, "the other worker took the task over")
	require.Less(t, takeover, 2*time.Second+5*time.Second+3*time.Second, "within ack wait, pull expiry and the task's own 3s")
	p.Heal()
	outage := time.Since(cut)

	wb.signal(syscall.SIGTERM)
	require.NoError(t, wb.wait(60*time.Second))
	healed := time.Now()
	after = b.submit(task("wf-part", "T2"))
	got = b.waitTerminal("wf-part", after, 1)
	require.Equal(t, "A", got["T2"].Worker, "the healed worker pulls again")
	select {
	case <-a.done:
		t.Fatalf("worker A exited: %v", a.exitErr)
	default: // the same process, never restarted
	}
	t.Logf("partition: cut %s; taken over %s after the cut; healed worker ran the next task %s after B left",
		outage.Round(10*time.Millisecond), takeover.Round(10*time.Millisecond), time.Since(healed).Round(10*time.Millisecond))
	require.Equal(t, 1, countCalls(calls(t, log), "T1", subjects.RolePlanner), "the planner's result was cached")
	b.quiet("wf-part", 2)
}
