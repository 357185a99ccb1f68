package benchlab

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/bench"
	"github.com/droverhq/drover/internal/natstest"
)

// phaseConfig is a small run's configuration against srv.
func phaseConfig(t *testing.T, url string) Config {
	t.Helper()
	return withDefaults(Config{Tasks: 20, Concurrency: 4, URL: url, Timeout: 2 * time.Minute, Log: natstest.Quiet()})
}

// The floor, contract-ops and the minimal worker end every task, store the
// writes they are meant to, and break their operations down into those
// waited for and those in flight with other work.
func TestRawPhasesOverlapped(t *testing.T) {
	srv := natstest.Server(t)
	cfg := phaseConfig(t, srv.ClientURL())
	ctx := context.Background()
	ops := func(ph Result) map[string]OpStat {
		out := map[string]OpStat{}
		for _, o := range ph.Ops {
			out[o.Op] = o
		}
		return out
	}
	cases := []struct {
		name    string
		run     func(context.Context, Config, string) (Result, error)
		writes  float64
		waited  map[string]float64 // op: per task, waited for at once
		overlap map[string]float64 // op: per task, in flight with other work
	}{
		{"floor", runFloor, 3,
			map[string]float64{"kv get": 1, "kv put": 1, "ack": 1},
			map[string]float64{"audit publish (async)": 1}},
		{"contract-ops", runOps, 12,
			map[string]float64{"state get (claim read)": 1, "cache get (miss)": 3, "state create (CAS)": 1,
				"state update (CAS)": 2, "audit publish (fenced)": 5, "ack": 1},
			map[string]float64{"cache put (async)": 3}},
		{"minimal worker", runMinimal, 12,
			map[string]float64{"state get (claim read)": 1, "cache get (miss)": 3, "state create (CAS)": 1,
				"state update (CAS)": 2, "audit publish (fenced)": 5, "ack": 1},
			map[string]float64{"cache put (async)": 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ph, err := tc.run(ctx, cfg, srv.ClientURL())
			require.NoError(t, err)
			require.Equal(t, cfg.Tasks, ph.Completed)
			require.InDelta(t, tc.writes, ph.WritesPerTask, 1e-9)
			for op, n := range tc.waited {
				require.Contains(t, ops(ph), op)
				require.InDelta(t, n, ops(ph)[op].PerTask, 1e-9, op)
				require.True(t, ops(ph)[op].Waited, op)
			}
			for op, n := range tc.overlap {
				require.Contains(t, ops(ph), op)
				require.InDelta(t, n, ops(ph)[op].PerTask, 1e-9, op)
				require.False(t, ops(ph)[op].Waited, op)
			}
			require.Len(t, ops(ph), len(tc.waited)+len(tc.overlap))
		})
	}
}

// Contract-ops stores what Drover stores for a cold one-round task, and
// the floor its three writes: the lab's references stay in step with the
// pipeline they are compared with.
func TestContractOpsStoresWhatDroverStores(t *testing.T) {
	srv := natstest.Server(t)
	cfg := phaseConfig(t, srv.ClientURL())
	ctx := context.Background()
	rep, err := bench.Run(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, cfg.Tasks, rep.Drover.Completed)
	ops, err := runOps(ctx, cfg, srv.ClientURL())
	require.NoError(t, err)
	require.Equal(t, cfg.Tasks, ops.Completed)
	require.InDelta(t, rep.Writes.PerTask, ops.WritesPerTask, 1e-9, "contract-ops stores what Drover stores")
	minimal, err := runMinimal(ctx, cfg, srv.ClientURL())
	require.NoError(t, err)
	require.InDelta(t, rep.Writes.PerTask, minimal.WritesPerTask, 1e-9, "the minimal worker stores what Drover stores")
	floor, err := runFloor(ctx, cfg, srv.ClientURL())
	require.NoError(t, err)
	require.InDelta(t, 3, floor.WritesPerTask, 1e-9, "floor: request, KV put, audit publish")
	require.Greater(t, rep.Drover.AllocsPerTask, floor.AllocsPerTask, "Drover allocates more per task than the floor's four operations")
}

// The fully cached contract-ops phase makes a cached task's operations:
// the claim read, three cache hits, one state write, five fenced events
// and the ack.
func TestRunOpsCached(t *testing.T) {
	srv := natstest.Server(t)
	cfg := phaseConfig(t, srv.ClientURL())
	cfg.Tasks = 8
	c, err := runOpsCached(context.Background(), cfg, srv.ClientURL())
	require.NoError(t, err)
	require.Equal(t, 8, c.Completed, "the cached contract-ops phase ran its tasks")
	require.InDelta(t, 7.0, c.WritesPerTask, 0.001, "request, state, five events")
	var ops []string
	for _, o := range c.Ops {
		ops = append(ops, o.Op)
	}
	require.ElementsMatch(t, []string{"state get (claim read)", "cache get (hit)", "state create (CAS)", "audit publish (fenced)", "ack"}, ops)
}

// The fully cached contract-ops phase fills the cache (three results per
// task) before it is timed, in windows, so a fill larger than the async
// publish limit on a server that fsyncs before every ack never stalls;
// every task then finds its three results.
func TestRunOpsCachedFillsMoreThanTheAsyncWindow(t *testing.T) {
	srv := natstest.Server(t)
	cfg := phaseConfig(t, srv.ClientURL())
	cfg.Tasks = rawAsyncWindow/3 + 100
	ph, err := runOpsCached(context.Background(), cfg, srv.ClientURL())
	require.NoError(t, err)
	require.Equal(t, cfg.Tasks, ph.Completed)
	require.InDelta(t, 7.0, ph.WritesPerTask, 0.001, "the fill is not counted")
}
