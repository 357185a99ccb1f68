package tests

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// Row 25: the worker's wall clock jumps an hour forward, then an hour
// back, while a task runs (an injected clock: a loopback server's clock
// cannot be moved without root). Each task completes on its one delivery,
// each role runs once (no self-fencing, no abandonment), the events keep
// the stream's order, and no duration is negative.
func TestFaultClockJump(t *testing.T) {
	t.Parallel()
	for _, jump := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(jump.String(), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var offset atomic.Int64
			clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			sim := runner.NewSim(runner.SimOptions{})
			b.startWorker(worker.Config{Concurrency: 2, Runners: runner.SimSet(sim), Pipeline: pipeline.Config{Now: clock}})
			after := b.submit(withSim(task("wf-clock", "T1"), `{"latency_ms": {"implementer": 1000}}`))
			require.Eventually(t, func() bool { return sim.Calls(subjects.RoleImplementer) > 0 }, 30*time.Second, 5*time.Millisecond)
			offset.Store(int64(jump))
			got := b.waitTerminal("wf-clock", after, 1)
			require.Equal(t, subjects.EventTaskCompleted, got["T1"].EventType)
			for _, role := range []subjects.Role{subjects.RolePlanner, subjects.RoleImplementer, subjects.RoleJudge} {
				require.EqualValues(t, 1, sim.Calls(role), "%s ran once", role)
			}
			evs := b.quiet("wf-clock", 1)
			var types []subjects.EventType
			for _, ev := range evs {
				types = append(types, ev.EventType)
				require.GreaterOrEqual(t, ev.DurationMS, int64(0), "%s: duration_ms", ev.EventID)
			}
			require.Equal(t, []subjects.EventType{subjects.EventTaskAccepted, subjects.EventPlannerDecision,
				subjects.EventImplementerChange, subjects.EventJudgeVerdict, subjects.EventTaskCompleted}, types, "the stream's order")
			require.EqualValues(t, 1, consumerInfo(t, b).Delivered.Consumer, "one delivery")
		})
	}
}
