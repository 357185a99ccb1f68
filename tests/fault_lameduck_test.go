package tests

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/workflow"
	"github.com/droverhq/drover/subjects"
)

// Row 11: a rolling lame-duck restart of a 3-node cluster under load. Each
// node in turn gets SIGUSR2 (`drover server` stops in lame duck mode: its
// leaderships move, its clients are closed a few at a time and reconnect
// elsewhere), exits 0 and is started again on its store; the next node goes
// only once every replica of the tasks, audit and state streams is current
// again. After the first node is back, the workflow is paused: every task
// not yet finished parks, and none completes while paused, through the rest
// of the roll; resumed, all complete once; O. CI rolls one node;
// DROVER_FAULTS=full rolls all three.
func TestClusterRollingLameDuck(t *testing.T) {
	t.Parallel()
	c, b := startCluster(t)
	wa, wb := b.startClusterWorker("A"), b.startClusterWorker("B")
	roll := c.order[:1]
	if os.Getenv("DROVER_FAULTS") == "full" {
		roll = c.order
	}

	const wf, n = "wf-roll", 300
	var reqs []subjects.TaskRequest
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("T%d", i))
		reqs = append(reqs, withSim(task(wf, ids[i]), `{"latency_ms": {"implementer": 1000}}`))
	}
	after := b.submit(reqs...)
	ctx := context.Background()
	followCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	seen := 0
	require.NoError(t, producer.FollowTerminal(followCtx, b.js, b.names, wf, after, func(producer.Terminal) bool {
		seen++
		return seen < n/10
	}))

	start := time.Now()
	t.Logf("%d of %d done when the roll begins", b.status(wf).Counts[subjects.StateCompleted], n)
	var parkedAt time.Time
	for i, name := range roll {
		signalled := time.Now()
		c.nodes[name].signal(syscall.SIGUSR2)
		require.NoError(t, c.nodes[name].wait(30*time.Second), "node %s exits 0 after lame duck mode", name)
		exited := time.Since(signalled)
		c.restart(name)
		b.waitReplicasCurrent(b.names.TasksStream(), b.names.AuditStream(), "KV_"+b.names.StateBucket())
		t.Logf("node %s: exited %s after SIGUSR2, back and current %s after it", name, exited.Round(10*time.Millisecond), time.Since(signalled).Round(10*time.Millisecond))
		if i == 0 {
			r := b.control(wf, workflow.ActionPause, "rolling restart")
			require.Equal(t, subjects.StatePaused, r.State)
			b.waitNoneRunning(wf)
			parkedAt = time.Now()
		}
	}
	done := b.status(wf).Counts[subjects.StateCompleted]
	require.Less(t, done, n, "the pause left tasks to park")
	parkedDone := time.Now()

	resumedAt := time.Now()
	r := b.control(wf, workflow.ActionResume, "")
	require.Equal(t, subjects.StateRunning, r.State)
	got := b.waitAll(wf, after, ids, wa, wb)
	requireAllCompleted(t, got)
	evs := b.quiet(wf, n)
	late := 0
	for _, ev := range evs {
		// A task finished after the pause took effect (none running) and
		// before the resume would not have honoured it.
		if ev.EventType == subjects.EventTaskCompleted && ev.Timestamp.After(parkedAt) && ev.Timestamp.Before(resumedAt) {
			late++
		}
	}
	require.Zero(t, late, "completions while paused")
	t.Logf("rolled %d nodes in %s; paused after the first with %d of %d done; all done %s after the roll began",
		len(roll), parkedDone.Sub(start).Round(100*time.Millisecond), done, n, time.Since(start).Round(100*time.Millisecond))
}

// waitReplicasCurrent waits until each stream has a leader and every
// replica is current.
func (b *bundle) waitReplicasCurrent(streams ...string) {
	b.t.Helper()
	require.EventuallyWithT(b.t, func(c *assert.CollectT) {
		for _, name := range streams {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s, err := b.js.Stream(ctx, name)
			if !assert.NoError(c, err, name) {
				cancel()
				return
			}
			info, err := s.Info(ctx)
			cancel()
			if !assert.NoError(c, err, name) || !assert.NotNil(c, info.Cluster, name) {
				return
			}
			assert.NotEmpty(c, info.Cluster.Leader, "%s leader", name)
			assert.Len(c, info.Cluster.Replicas, 2, "%s replicas", name)
			for _, r := range info.Cluster.Replicas {
				assert.True(c, r.Current && !r.Offline, "%s replica %s current", name, r.Name)
			}
		}
	}, 60*time.Second, 100*time.Millisecond, "replicas of %v current", streams)
}

// waitNoneRunning waits until no task of the workflow is running: each
// has parked or finished.
func (b *bundle) waitNoneRunning(wf string) {
	b.t.Helper()
	require.EventuallyWithT(b.t, func(c *assert.CollectT) {
		kv, err := b.js.KeyValue(context.Background(), b.names.StateBucket())
		if !assert.NoError(c, err) {
			return
		}
		st, err := workflow.GetStatus(context.Background(), kv, wf)
		if assert.NoError(c, err) {
			assert.Zero(c, st.Counts[subjects.StateRunning], "running")
		}
	}, 60*time.Second, 50*time.Millisecond, "the tasks of %s parked", wf)
}
