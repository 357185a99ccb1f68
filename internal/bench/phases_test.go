package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// phaseConfig is a small run's configuration against srv.
func phaseConfig(t *testing.T, url string) Config {
	t.Helper()
	cfg, err := Config{Tasks: 20, Concurrency: 4, URL: url, Timeout: 2 * time.Minute, Log: natstest.Quiet()}.withDefaults()
	require.NoError(t, err)
	return cfg
}

// The latency phase observes, through the pipeline's metrics, two gaps
// between roles and one submit-to-planner-start per cold one-round task.
func TestRunLatency(t *testing.T) {
	srv := natstest.Server(t)
	cfg := phaseConfig(t, srv.ClientURL())
	cfg.LatencyTasks = 5
	l, err := runLatency(context.Background(), cfg, srv.ClientURL())
	require.NoError(t, err)
	require.Equal(t, 5, l.Tasks)
	require.Equal(t, 10, l.RoleGap.N, "planner to implementer and implementer to judge")
	require.Equal(t, 5, l.SubmitToStart.N)
	require.Equal(t, 5, l.SubmitToEnd.N)
	for _, d := range []Dist{l.RoleGap, l.SubmitToStart, l.SubmitToEnd} {
		require.GreaterOrEqual(t, d.P99, d.P50)
		require.GreaterOrEqual(t, d.Max, d.P99)
	}
	require.Positive(t, l.SubmitToEnd.P50)
}

// The agents phase holds the whole fleet in flight at once on one worker,
// ends every task no sooner than its runners' waits allow, and counts what
// the fleet held.
func TestRunAgents(t *testing.T) {
	srv := natstest.Server(t, natstest.Sync(time.Minute))
	cfg := phaseConfig(t, srv.ClientURL())
	cfg.Agents, cfg.AgentLatency = 40, 400*time.Millisecond
	a, err := runAgents(context.Background(), cfg, srv.ClientURL())
	require.NoError(t, err)
	require.Equal(t, 40, a.Tasks)
	require.Equal(t, 40, a.Completed, "every agent's task completes")
	require.Zero(t, a.Failed)
	require.Positive(t, a.Start)
	require.Equal(t, a.Start+3*600*time.Millisecond, a.Ideal, "the start, then the longest task's 600ms in each of three roles")
	require.GreaterOrEqual(t, a.Elapsed, a.Ideal, "no task ends before the fleet started and its runners waited")
	require.EqualValues(t, 40, a.Peak, "the fleet, released at once, waits at once: the shortest wait is 200ms")
	require.Positive(t, a.HeapStartKiB, "agents in flight hold memory")
	require.GreaterOrEqual(t, a.HeapPeakKiB, a.HeapStartKiB, "the start's collection is one the peak saw")
	require.Positive(t, a.GoroutinesPerAgent)
	require.False(t, a.InProcessServer, "the test's server is not the bench's own")
	require.Positive(t, a.CPUPerTask)
	require.Equal(t, 80, a.RoleGap.N, "planner to implementer and implementer to judge")
	require.Equal(t, 40, a.SubmitToStart.N)

	var out bytes.Buffer
	writeAgents(&out, a)
	for _, want := range []string{"agents: 40 tasks at once", "all 40 planners started within", "40 completed, 0 failed",
		"KiB of live heap with the fleet started", "per agent (the process's)", "role to role", "submit to planner start"} {
		require.Contains(t, out.String(), want)
	}
}

// The fleet's start holds each planner, without running it, until every
// one has started and the phase lets them go; a held planner whose
// context ends returns without running.
func TestFleetStartHoldsPlanners(t *testing.T) {
	sim := runner.NewSim(runner.SimOptions{})
	fleet := newFleetStart(3)
	planner := fleet.planner(sim)
	require.Equal(t, sim.Identity(), planner.Identity(), "the cache keys are the sim's")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := planner.Run(ctx, runner.Request{Role: subjects.RolePlanner})
	require.ErrorIs(t, err, context.Canceled, "a held planner returns when its context ends")
	require.Zero(t, sim.TotalCalls(), "and does not run")

	results := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := planner.Run(context.Background(), runner.Request{Role: subjects.RolePlanner,
				Task: subjects.TaskRequest{ID: fmt.Sprintf("t%d", i), Workflow: "wf", Scope: "s"}})
			results <- err
		}()
	}
	<-fleet.all // the third start: the cancelled one counts
	require.EqualValues(t, 3, fleet.started.Load())
	require.Zero(t, sim.TotalCalls(), "held until released")
	close(fleet.release)
	for range 2 {
		require.NoError(t, <-results)
	}
	require.EqualValues(t, 2, sim.TotalCalls())
}

// Each agent's runners wait their own time, spread evenly over half to
// one and a half times the mean, in the sim's whole milliseconds.
func TestAgentWait(t *testing.T) {
	for _, tc := range []struct {
		i, n int
		mean time.Duration
		want int
	}{
		{0, 1, time.Second, 1000},
		{0, 5, time.Second, 500},
		{2, 5, time.Second, 1000},
		{4, 5, time.Second, 1500},
		{999, 1000, 5 * time.Second, 7500},
		{0, 1000, 5 * time.Second, 2500},
		{0, 3, 15 * time.Millisecond, 7},
		{1, 3, 15 * time.Millisecond, 14},
		{2, 3, 15 * time.Millisecond, 22},
		{1, 2, 10 * time.Millisecond, 15},
	} {
		require.Equal(t, tc.want, agentWait(tc.i, tc.n, tc.mean), "task %d of %d, mean %s", tc.i, tc.n, tc.mean)
	}
}

// The agents phase's settings are refused when it could not measure.
func TestAgentsSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"too many", Config{Agents: MaxAgents + 1}, "at most 20000"},
		{"negative latency", Config{Agents: 5, AgentLatency: -time.Second}, "negative setting"},
		{"no wait", Config{Agents: 5, AgentLatency: time.Millisecond}, "at least 10ms, so that every agent waits"},
		{"waits past the timeout", Config{Agents: 5, AgentLatency: time.Minute, Timeout: 4 * time.Minute}, "the longest task's waits (4m30s) outlast the timeout 4m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.withDefaults()
			require.ErrorContains(t, err, tc.want)
		})
	}
	cfg, err := Config{Agents: 5}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, DefaultAgentLatency, cfg.AgentLatency)
}

// The cached phase's second run, fed and followed through the wire
// contract, finds every role's result in the cache: no runner call and no
// cache write, and every task ends.
func TestRunCached(t *testing.T) {
	srv := natstest.Server(t)
	cfg := phaseConfig(t, srv.ClientURL())
	cfg.CachedTasks = 8
	c, err := runCached(context.Background(), cfg, srv.ClientURL())
	require.NoError(t, err)
	require.Equal(t, 8, c.Cold.Completed)
	require.Equal(t, 8, c.Warm.Completed)
	require.Zero(t, c.Warm.Failed)
	require.EqualValues(t, 3*8, c.Hits, "every role of the second run is a cache hit")
	require.Zero(t, c.Misses, "no runner call in the second run")
	require.EqualValues(t, 8, c.Writes.Request)
	for _, s := range c.Writes.Streams {
		if s.Stream == "KV_"+cfg.Names.CacheBucket() {
			require.Zero(t, s.Writes, "a cached run writes nothing into the cache")
		}
	}
	require.Positive(t, c.Warm.Elapsed)
	var text bytes.Buffer
	rep := &Report{Cached: c}
	require.NoError(t, rep.WriteText(&text))
	require.Contains(t, text.String(), "cached run")
}

// The disk probe times each fsync'd write, leaves nothing behind, and its
// audit floor is five such writes per cached task; the cached phase's
// report says it.
func TestProbeDisk(t *testing.T) {
	dir := t.TempDir()
	d, err := probeDisk(dir, 20, 1000)
	require.NoError(t, err)
	require.Equal(t, 20, d.Writes.N)
	require.Positive(t, d.Writes.P50)
	require.GreaterOrEqual(t, d.Writes.P99, d.Writes.P50)
	require.GreaterOrEqual(t, d.Writes.Max, d.Writes.P99)
	require.Equal(t, 5*1000*d.Writes.P50, d.AuditFloor)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "the probe's file is removed")

	_, err = probeDisk(filepath.Join(dir, "missing"), 1, 1)
	require.ErrorContains(t, err, "disk probe")

	var text bytes.Buffer
	require.NoError(t, (&Report{Cached: &Cached{Tasks: 1000, Disk: d}}).WriteText(&text))
	require.Contains(t, text.String(), "the store's disk: a 1 KiB write and its fsync take")
}
