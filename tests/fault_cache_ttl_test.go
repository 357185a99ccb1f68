package tests

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
)

// Row 21, expiry: the cache bucket's TTL (3 s here) removes a cold run's
// entries while the worker runs; the next run of the same task (another
// workflow) finds none, calls every role, says cached:false, and its outcome
// equals the cold run's; the run after is served by the entries it wrote
// again; O.
func TestFaultCacheExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sim := runner.NewSim(runner.SimOptions{})
	b.startWorker(worker.Config{Concurrency: 2, Runners: runner.SimSet(sim), Streams: broker.Settings{Names: b.names, CacheTTL: 3 * time.Second}})
	const fast = `{}`
	cold, cached := b.cacheRun("wf-ttl-cold", fast)
	require.Equal(t, allCached(false), cached)
	kv := b.cacheKV()
	keys, err := kv.ListKeys(ctx)
	require.NoError(t, err)
	var all []string
	for k := range keys.Keys() {
		all = append(all, k)
	}
	require.Len(t, all, 3)
	require.Eventually(t, func() bool {
		for _, k := range all {
			if _, err := kv.Get(ctx, k); !errors.Is(err, jetstream.ErrKeyNotFound) {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "the entries expire")

	out, cached := b.cacheRun("wf-ttl-expired", fast)
	require.Equal(t, allCached(false), cached, "an expired entry is a miss")
	require.JSONEq(t, string(cold), string(out), "the same outcome as the cold run")
	require.EqualValues(t, 6, sim.TotalCalls())
	out, cached = b.cacheRun("wf-ttl-again", fast)
	require.Equal(t, allCached(true), cached, "written again, served again")
	require.JSONEq(t, string(cold), string(out))
	require.EqualValues(t, 6, sim.TotalCalls())
	b.oracle()
}
