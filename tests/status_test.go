package tests

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/cli"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/status"
	"github.com/droverhq/drover/internal/worker"
)

// statusFleet starts two workers of concurrency 1 whose planners hold
// every task until the returned release is called (or the test ends).
func statusFleet(t *testing.T, b *bundle) (h *holdRunners, release func()) {
	t.Helper()
	h = newHold()
	for _, id := range []string{"w1", "w2"} {
		b.startWorker(worker.Config{Concurrency: 1, Runners: h.set(), Version: "1.2.3", Pipeline: pipeline.Config{Worker: id}})
	}
	t.Cleanup(h.Release) // runs before the workers' cleanups stop them
	return h, h.Release
}

func TestStatusListsWorkersAndQueueCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h, release := statusFleet(t, b)
	const wf = "wf-status"
	after := b.submit(task(wf, "T1"), task(wf, "T2"), task(wf, "T3"), task(wf, "T4"), task(wf, "T5"))
	h.await(t, 2) // each worker holds one task; three wait

	ctx := context.Background()
	col, err := status.NewCollector(status.Deps{NC: b.nc, JS: b.js, Names: b.names}, status.Config{})
	require.NoError(t, err)
	r, err := col.Collect(ctx)
	require.NoError(t, err)
	require.Equal(t, []status.Queue{{Name: "default", Consumer: "drover-default", Pending: 3, InFlight: 2}}, r.Queues)
	require.Len(t, r.Workers, 2)
	for i, id := range []string{"w1", "w2"} {
		wk := r.Workers[i]
		require.Empty(t, wk.Error)
		require.Equal(t, id, wk.WorkerID)
		require.Equal(t, "1.2.3", wk.Version)
		require.Equal(t, 1, wk.Concurrency)
		require.EqualValues(t, 1, wk.InFlight)
		require.Equal(t, []string{"default"}, wk.Queues)
		require.Equal(t, "running", wk.State)
		require.NotEmpty(t, wk.Host)
		require.NotEmpty(t, wk.ServiceID)
		require.False(t, wk.Started.IsZero())
		require.GreaterOrEqual(t, wk.UptimeS, 0.0)
	}
	require.Nil(t, r.Cache.HitRatio, "no role has finished yet")

	code, out, errOut := b.drover("status")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"QUEUE", "default", "w1", "w2", "1.2.3", "cache  0 entries", "audit  "} {
		require.Contains(t, out, want)
	}

	// Finish the tasks and dead-letter a request that cannot be read.
	release()
	b.waitTerminal(wf, after, 5)
	b.publishRaw([]byte("{not json"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := col.Collect(ctx)
		if !assert.NoError(c, err) || !assert.Len(c, got.Queues, 1) || !assert.Len(c, got.Workers, 2) {
			return
		}
		q := got.Queues[0]
		assert.Zero(c, q.Pending, "pending")
		assert.Zero(c, q.InFlight, "in flight")
		assert.EqualValues(c, 1, q.DeadLettered, "dead-lettered")
		assert.EqualValues(c, 1, got.Workers[0].Tasks.Rejected+got.Workers[1].Tasks.Rejected, "rejected")
	}, 30*time.Second, 20*time.Millisecond)

	code, out, errOut = b.drover("status", "--json")
	require.Equal(t, 0, code, errOut)
	var jr status.Report
	require.NoError(t, json.Unmarshal([]byte(out), &jr), out)
	require.Len(t, jr.Workers, 2)
	require.Equal(t, status.Queue{Name: "default", Consumer: "drover-default", DeadLettered: 1}, jr.Queues[0])
	require.EqualValues(t, 5, jr.Workers[0].Tasks.Completed+jr.Workers[1].Tasks.Completed)
	require.EqualValues(t, 15, jr.Cache.Entries, "three roles of five tasks")
	require.EqualValues(t, 15, jr.Cache.Misses)
	require.NotNil(t, jr.Cache.HitRatio)
	require.Zero(t, *jr.Cache.HitRatio)
	require.EqualValues(t, 5*5+1, jr.Audit.Messages, "five events per task and one rejection")
	require.Positive(t, jr.Audit.Bytes)
}

func TestStatusWatchRedrawsUntilCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	statusFleet(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &watchWriter{want: "drover status", hits: make(chan struct{}, 16)}
	var stderr cliBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(ctx, []string{"--nats-url", b.url, "status", "--watch", "50ms", "--discover-wait", "100ms"}, out, &stderr)
	}()
	out.await(t)
	out.await(t)
	cancel() // Ctrl-C
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("status --watch did not stop when its context ended")
	}
	blocks := strings.Split(strings.TrimSpace(out.String()), "\n\ndrover status")
	require.GreaterOrEqual(t, len(blocks), 2, "successive blocks when stdout is not a terminal:\n%s", out)
	require.NotContains(t, out.String(), "\033[2J", "no screen clearing off a terminal")
	require.Contains(t, blocks[len(blocks)-1], "w2")
}
