package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/subjects"
)

// natsCluster is three `drover server` processes forming one NATS cluster
// (built without the race detector: the nodes are not under test).
type natsCluster struct {
	t     *testing.T
	nodes map[string]*proc    // by server name
	args  map[string][]string // each node's command line, to restart it
	old   map[string][]*proc  // earlier processes of restarted nodes, for their logs
	order []string
	urls  string // every node's client URL, comma-separated
}

// startCluster starts a 3-node cluster and returns a bundle connected to
// all of its nodes once JetStream has a meta leader. On failure the test
// output holds every node's log.
func startCluster(t *testing.T) (*natsCluster, *bundle) {
	t.Helper()
	c := &natsCluster{t: t, nodes: map[string]*proc{}, args: map[string][]string{}, old: map[string][]*proc{}}
	const n = 3
	clients := make([]string, n)
	routes := make([]string, n)
	for i := range n {
		clients[i] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	}
	var urls []string
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		c.args[name] = []string{"server", "--name", name, "--listen", clients[i],
			"--data", filepath.Join(t.TempDir(), name), "--cluster-name", "drover-test",
			"--cluster-listen", strings.TrimPrefix(routes[i], "nats://"), "--routes", strings.Join(routes, ","),
			"--log-format", "json", "--log-level", "debug", "--lame-duck", "2s", "--lame-duck-grace", "300ms"}
		c.nodes[name] = spawnBin(t, plainBinary(t), c.args[name]...)
		c.order = append(c.order, name)
		urls = append(urls, "nats://"+clients[i])
	}
	c.urls = strings.Join(urls, ",")
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range c.order {
				for i, p := range append(c.old[name], c.nodes[name]) {
					t.Logf("---- node %s log (process %d) ----\n%s", name, i+1, p.stderrText())
				}
			}
		}
	})
	for _, p := range c.nodes {
		p.waitStarted(60 * time.Second)
	}
	b := connectBundle(t, c.urls)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := b.js.AccountInfo(ctx)
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "no JetStream meta leader")
	return c, b
}

// restart starts a node again, with the same name, addresses and store,
// after its process exited.
func (c *natsCluster) restart(name string) {
	c.t.Helper()
	c.old[name] = append(c.old[name], c.nodes[name])
	c.nodes[name] = spawnBin(c.t, plainBinary(c.t), c.args[name]...)
	c.nodes[name].waitStarted(60 * time.Second)
}

// startClusterWorker starts a worker process with R3 streams and buckets
// and the URLs of every node; on failure the test output holds its log.
func (b *bundle) startClusterWorker(id string, extra ...string) *proc {
	b.t.Helper()
	p := b.startProc(append([]string{"--replicas", "3", "--worker-id", id, "--concurrency", "8",
		"--ack-wait", "3s", "--retry-backoff", "100ms", "--retry-backoff-max", "1s", "--max-deliver", "20"}, extra...)...)
	b.t.Cleanup(func() {
		if b.t.Failed() { // its other output (a goroutine dump) spawn shows
			p.mu.Lock()
			defer p.mu.Unlock()
			var lines []string
			for _, m := range p.logs {
				line, _ := json.Marshal(m)
				lines = append(lines, string(line))
			}
			b.t.Logf("---- worker %s log ----\n%s", id, strings.Join(lines, "\n"))
		}
	})
	return p
}

// streamLeader returns the server name leading the stream, "" while none
// does or the cluster does not answer.
func (b *bundle) streamLeader(stream string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return ""
	}
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil {
		return ""
	}
	return info.Cluster.Leader
}

// publishOnce publishes one request with a PubAck deadline.
func (b *bundle) publishOnce(r subjects.TaskRequest, d time.Duration) (producer.Submitted, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return producer.Publish(ctx, b.js, b.names, "default", r)
}

// errorTally counts producer errors by message.
type errorTally struct {
	mu sync.Mutex
	n  map[string]int
}

func (e *errorTally) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == nil {
		e.n = map[string]int{}
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, "publish: "); i >= 0 {
		msg = msg[i+len("publish: "):] // drop the task's name
	}
	e.n[msg]++
}

func (e *errorTally) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for msg, n := range e.n {
		out = append(out, fmt.Sprintf("%dx %q", n, msg))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// publishUntilAcked publishes r again (same Nats-Msg-Id) until it gets a
// PubAck, counting the errors on the way.
func (b *bundle) publishUntilAcked(r subjects.TaskRequest, errs *errorTally, within time.Duration) (producer.Submitted, error) {
	deadline := time.Now().Add(within)
	for {
		sub, err := b.publishOnce(r, 2*time.Second)
		if err == nil {
			return sub, nil
		}
		errs.add(err)
		if time.Now().After(deadline) {
			return sub, fmt.Errorf("no PubAck for %s within %s: %w", r.ID, within, err)
		}
	}
}

func (b *bundle) mustPublishUntilAcked(r subjects.TaskRequest, errs *errorTally) producer.Submitted {
	b.t.Helper()
	sub, err := b.publishUntilAcked(r, errs, 60*time.Second)
	require.NoError(b.t, err)
	return sub
}

// longestPause returns the longest time between two consecutive terminal
// events of evs where the second comes after from: how long completions
// stalled around and after a fault at from.
func longestPause(evs []subjects.AuditEvent, from time.Time) time.Duration {
	var ts []time.Time
	for _, ev := range evs {
		if ev.EventType.Terminal() {
			ts = append(ts, ev.Timestamp)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	var longest time.Duration
	for i := 1; i < len(ts); i++ {
		if ts[i].After(from) {
			longest = max(longest, ts[i].Sub(ts[i-1]))
		}
	}
	return longest
}

// firstAfter returns the first terminal event's time after from.
func firstAfter(evs []subjects.AuditEvent, from time.Time) time.Time {
	var first time.Time
	for _, ev := range evs {
		if ev.EventType.Terminal() && ev.Timestamp.After(from) && (first.IsZero() || ev.Timestamp.Before(first)) {
			first = ev.Timestamp
		}
	}
	return first
}

// waitAll waits for a terminal event of every task in ids. On timeout it
// fails with what the missing tasks left behind: their audit events, their
// state, the consumer's counts, and the workers' goroutines (SIGQUIT).
func (b *bundle) waitAll(wf string, after uint64, ids []string, workers ...*proc) map[string]subjects.AuditEvent {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := map[string]subjects.AuditEvent{}
	err := producer.FollowTerminal(ctx, b.js, b.names, wf, after, func(tm producer.Terminal) bool {
		got[tm.Event.TaskID] = tm.Event
		return len(got) < len(ids)
	})
	if err == nil {
		return got
	}
	var report []string
	evs := b.events(wf)
	kv, kvErr := b.js.KeyValue(context.Background(), b.names.StateBucket())
	for _, id := range ids {
		if _, ok := got[id]; ok {
			continue
		}
		var trail []string
		for _, ev := range evs {
			if ev.TaskID == id {
				trail = append(trail, fmt.Sprintf("%s(%s %s %s)", ev.EventType, ev.Worker, ev.Action, ev.Error))
			}
		}
		state := fmt.Sprint(kvErr)
		if kvErr == nil {
			if e, err := kv.Get(context.Background(), subjects.StateKey(wf, id)); err != nil {
				state = err.Error()
			} else {
				state = fmt.Sprintf("rev %d %s", e.Revision(), e.Value())
			}
		}
		report = append(report, fmt.Sprintf("%s: events %v; state %s", id, trail, state))
	}
	ci := "?"
	if c, err := b.js.Consumer(context.Background(), b.names.TasksStream(), b.names.Consumer("default")); err == nil {
		if info, err := c.Info(context.Background()); err == nil {
			ci = fmt.Sprintf("pending %d, ack pending %d, redelivered %d, waiting %d, delivered %d, ack floor %d",
				info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting, info.Delivered.Stream, info.AckFloor.Stream)
		}
	}
	for _, w := range workers {
		_ = w.stop(syscall.SIGQUIT, 30*time.Second) // the log shows its goroutines
	}
	b.t.Fatalf("%s: %d of %d tasks ended (%v); consumer: %s; missing:\n%s", wf, len(got), len(ids), err, ci, strings.Join(report, "\n"))
	return nil
}

func requireAllCompleted(t *testing.T, got map[string]subjects.AuditEvent) {
	t.Helper()
	for id, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, "%s: %s %s", id, ev.EventType, ev.Action)
	}
}

// Scenario: on a 3-node cluster with R3 streams and buckets, SIGKILL the
// node leading the task stream under load, while a producer keeps
// submitting. A new leader takes over; every acknowledged task completes,
// none twice, and the producer's retries (same Nats-Msg-Id) store each
// request once.
func TestClusterKillStreamLeader(t *testing.T) {
	t.Parallel()
	c, b := startCluster(t)
	wa, wb := b.startClusterWorker("A"), b.startClusterWorker("B")
	ctx := context.Background()
	st, err := b.js.Stream(ctx, b.names.TasksStream())
	require.NoError(t, err)
	require.Equal(t, 3, st.CachedInfo().Config.Replicas, "R3 task stream")
	for _, bucket := range []string{b.names.StateBucket(), b.names.CacheBucket()} {
		kv, err := b.js.KeyValue(ctx, bucket)
		require.NoError(t, err)
		s, err := kv.Status(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, s.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas, "R3 bucket %s", bucket)
	}

	const wf, first, second = "wf-leader", 300, 100
	var reqs []subjects.TaskRequest
	for i := range first {
		reqs = append(reqs, withSim(task(wf, fmt.Sprintf("T%d", i)), `{"latency_ms": {"implementer": 20}}`))
	}
	after := b.submit(reqs...)
	followCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	seen := 0
	require.NoError(t, producer.FollowTerminal(followCtx, b.js, b.names, wf, after, func(producer.Terminal) bool {
		seen++
		return seen < first/4
	}))

	leader := b.streamLeader(b.names.TasksStream())
	require.Contains(t, c.nodes, leader, "task stream leader")
	killed := time.Now()
	require.Error(t, c.nodes[leader].stop(syscall.SIGKILL, 30*time.Second))

	// A producer keeps submitting through the failover, retrying each
	// request until it is acknowledged.
	var errs errorTally
	dups := 0
	var producerErr error
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		for i := range second {
			sub, err := b.publishUntilAcked(withSim(task(wf, fmt.Sprintf("U%d", i)), `{"latency_ms": {"implementer": 20}}`), &errs, 60*time.Second)
			if err != nil {
				producerErr = err
				return
			}
			if sub.Duplicate {
				dups++
			}
		}
	}()
	var newLeader string
	require.Eventually(t, func() bool {
		newLeader = b.streamLeader(b.names.TasksStream())
		return newLeader != "" && newLeader != leader
	}, 30*time.Second, 50*time.Millisecond, "no new task stream leader after killing %s", leader)
	elected := time.Since(killed)
	natstest.Recv(t, producerDone, 30*time.Second)
	require.NoError(t, producerErr)

	var ids []string
	for i := range first {
		ids = append(ids, fmt.Sprintf("T%d", i))
	}
	for i := range second {
		ids = append(ids, fmt.Sprintf("U%d", i))
	}
	got := b.waitAll(wf, after, ids, wa, wb)
	requireAllCompleted(t, got)
	evs := b.quiet(wf, first+second)
	t.Logf("killed task stream leader %s after %d of %d completions; new leader %s within %s; longest pause between completions %s; all %d tasks done %s after the kill",
		leader, seen, first, newLeader, elected.Round(10*time.Millisecond), longestPause(evs, killed).Round(10*time.Millisecond),
		first+second, time.Since(killed).Round(100*time.Millisecond))
	t.Logf("producer during the failover: %d requests acknowledged, %d of them as duplicates of a timed-out attempt; errors: %s", second, dups, errs.String())
}

// Scenario: take two of the three nodes away under load: SIGKILL one (the
// task stream's leader, if it is not the producer's node) and SIGSTOP the
// other. A producer on the remaining node gets errors, never a PubAck; when
// the nodes come back (restart on the same store, SIGCONT) work resumes by
// itself, and every request acknowledged before, during or after the
// outage completes exactly once.
func TestClusterQuorumLoss(t *testing.T) {
	t.Parallel()
	c, b := startCluster(t)
	httpA := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	wa, wb := b.startClusterWorker("A", "--http", httpA), b.startClusterWorker("B")

	const wf, first = "wf-quorum", 200
	var reqs []subjects.TaskRequest
	for i := range first {
		reqs = append(reqs, withSim(task(wf, fmt.Sprintf("T%d", i)), `{"latency_ms": {"implementer": 20}}`))
	}
	after := b.submit(reqs...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := 0
	require.NoError(t, producer.FollowTerminal(ctx, b.js, b.names, wf, after, func(producer.Terminal) bool {
		seen++
		return seen < first/4
	}))

	// Take away the two nodes the producer is not connected to.
	survivor := b.nc.ConnectedServerName()
	leader := b.streamLeader(b.names.TasksStream())
	var others []string
	for _, name := range c.order {
		if name != survivor {
			others = append(others, name)
		}
	}
	if others[1] == leader {
		others[0], others[1] = others[1], others[0]
	}
	killed, paused := others[0], others[1]
	require.Error(t, c.nodes[killed].stop(syscall.SIGKILL, 30*time.Second))
	c.nodes[paused].signal(syscall.SIGSTOP)
	require.Eventually(t, c.nodes[paused].stopped, 5*time.Second, 10*time.Millisecond)
	downAt := time.Now()

	// The producer keeps trying: one request every 500ms, each with a 1s
	// PubAck deadline, 16 attempts. Any PubAck here would be false.
	var errs errorTally
	var outage []subjects.TaskRequest
	acked := 0
	tick := time.NewTicker(500 * time.Millisecond)
	for i := range 16 {
		r := withSim(task(wf, fmt.Sprintf("O%d", i)), `{"latency_ms": {"implementer": 20}}`)
		outage = append(outage, r)
		if _, err := b.publishOnce(r, time.Second); err != nil {
			errs.add(err)
		} else {
			acked++
		}
		<-tick.C
	}
	tick.Stop()
	require.Zero(t, acked, "PubAcks without a quorum")
	// Worker A says why it is not ready: in /readyz, its metric and its log.
	b.requireQuorumSignal(wa, httpA, false)

	c.restart(killed)
	c.nodes[paused].signal(syscall.SIGCONT)
	backAt := time.Now()
	// The first request after the outage: acknowledged once a leader is back.
	var later errorTally
	b.mustPublishUntilAcked(withSim(task(wf, "P"), `{}`), &later)
	firstAck := time.Since(backAt)
	// The producer retries what failed during the outage, with the same
	// Nats-Msg-Id: a request the cluster stored after all is a duplicate.
	dups := 0
	for _, r := range outage {
		if b.mustPublishUntilAcked(r, &later).Duplicate {
			dups++
		}
	}

	total := first + len(outage) + 1
	ids := []string{"P"}
	for _, r := range append(reqs, outage...) {
		ids = append(ids, r.ID)
	}
	got := b.waitAll(wf, after, ids, wa, wb)
	requireAllCompleted(t, got)
	b.requireQuorumSignal(wa, httpA, true)
	evs := b.quiet(wf, total)
	t.Logf("after %d of %d completions: SIGKILL %s (task stream leader: %s), SIGSTOP %s, producer on %s; %s without a quorum: %d attempts, 0 PubAcks, errors: %s",
		seen, first, killed, leader, paused, survivor, backAt.Sub(downAt).Round(100*time.Millisecond), len(outage), errs.String())
	t.Logf("after restart and SIGCONT: first PubAck %s, first completion %s, all %d tasks done %s; %d of %d failed requests had been stored after all (duplicates on retry); errors after: %s",
		firstAck.Round(10*time.Millisecond), firstAfter(evs, backAt).Sub(backAt).Round(10*time.Millisecond), total,
		time.Since(backAt).Round(100*time.Millisecond), dups, len(outage), later.String())
}
