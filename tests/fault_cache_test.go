package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// cacheRun submits the same task under workflow wf and returns its
// task_completed output and whether each role's event says cached.
func (b *bundle) cacheRun(wf string, latency string) (json.RawMessage, map[subjects.EventType]bool) {
	b.t.Helper()
	after := b.submit(withSim(task(wf, "T1"), latency))
	got := b.waitTerminal(wf, after, 1)
	require.Equal(b.t, subjects.EventTaskCompleted, got["T1"].EventType, got["T1"].Error)
	cached := map[subjects.EventType]bool{}
	for _, ev := range b.events(wf) {
		if ev.Actor != subjects.ActorSystem {
			cached[ev.EventType] = ev.Cached
		}
	}
	return got["T1"].Output, cached
}

func (b *bundle) cacheKV() jetstream.KeyValue {
	b.t.Helper()
	kv, err := b.js.KeyValue(context.Background(), b.names.CacheBucket())
	require.NoError(b.t, err)
	return kv
}

func allCached(v bool) map[subjects.EventType]bool {
	return map[subjects.EventType]bool{subjects.EventPlannerDecision: v, subjects.EventImplementerChange: v, subjects.EventJudgeVerdict: v}
}

// Row 21: cache faults change cost, never outcomes. After a cold run of a
// task, (b) every entry is replaced by garbage: the next run (the same
// task in another workflow) calls every role, says cached:false, and
// overwrites the entries, which the run after serves; (c) the bucket is
// deleted while a task runs: it completes, calling the runners; (d) two
// workers race one key: both complete, one valid value per key. Every
// outcome equals the cold run's.
func TestFaultCacheFaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	const fast = `{}`
	cold, cached := b.cacheRun("wf-cold", fast)
	require.Equal(t, allCached(false), cached)
	require.EqualValues(t, 3, sim.TotalCalls())
	hit, cached := b.cacheRun("wf-hit", fast)
	require.Equal(t, allCached(true), cached, "a real hit")
	require.JSONEq(t, string(cold), string(hit))
	require.EqualValues(t, 3, sim.TotalCalls())

	// (b) Garbage under every key.
	kv := b.cacheKV()
	keys, err := kv.ListKeys(ctx)
	require.NoError(t, err)
	var all []string
	for k := range keys.Keys() {
		all = append(all, k)
		_, err := kv.Put(ctx, k, []byte(`{"output": garbage`))
		require.NoError(t, err)
	}
	require.Len(t, all, 3)
	out, cached := b.cacheRun("wf-corrupt", fast)
	require.Equal(t, allCached(false), cached, "a corrupt entry is a miss")
	require.JSONEq(t, string(cold), string(out))
	require.EqualValues(t, 6, sim.TotalCalls())
	for _, k := range all {
		e, err := kv.Get(ctx, k)
		require.NoError(t, err)
		require.True(t, json.Valid(e.Value()), "entry %s overwritten", k)
	}
	out, cached = b.cacheRun("wf-rewritten", fast)
	require.Equal(t, allCached(true), cached)
	require.JSONEq(t, string(cold), string(out))
	require.EqualValues(t, 6, sim.TotalCalls())

	// (d) Two deliveries race the same keys (the worker runs both at once).
	after := b.submit(withSim(task("wf-race-1", "R"), `{"latency_ms": {"planner": 300}}`), withSim(task("wf-race-2", "R"), `{"latency_ms": {"planner": 300}}`))
	outs := make([]json.RawMessage, 2)
	for i, wf := range []string{"wf-race-1", "wf-race-2"} {
		got := b.waitTerminal(wf, after, 1)
		require.Equal(t, subjects.EventTaskCompleted, got["R"].EventType)
		outs[i] = got["R"].Output
	}
	require.NotNil(t, outs[0])
	require.JSONEq(t, string(outs[0]), string(outs[1]), "the racers agree")
	keys, err = kv.ListKeys(ctx)
	require.NoError(t, err)
	n := 0
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		require.NoError(t, err)
		require.True(t, json.Valid(e.Value()), "entry %s", k)
		n++
	}
	require.Equal(t, 6, n, "one value per key: three of T1, three of R")

	// (c) The bucket deleted while a task runs.
	calls := sim.TotalCalls()
	after = b.submit(withSim(task("wf-gone", "T1"), `{"latency_ms": {"implementer": 500}}`))
	require.Eventually(t, func() bool { return sim.TotalCalls() >= calls+1 }, 30*time.Second, 5*time.Millisecond)
	require.NoError(t, b.js.DeleteKeyValue(ctx, b.names.CacheBucket()))
	got := b.waitTerminal("wf-gone", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got["T1"].EventType, got["T1"].Error)
	require.JSONEq(t, string(cold), string(got["T1"].Output), "the same outcome without a cache")
	out, cached = b.cacheRun("wf-nocache", fast)
	require.Equal(t, allCached(false), cached, "no cache: every role runs")
	require.JSONEq(t, string(cold), string(out))
	for i := range 3 {
		b.cacheRun(fmt.Sprintf("wf-after-%d", i), fast)
	}
	b.oracle()
}
