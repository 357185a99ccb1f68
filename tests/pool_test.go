package tests

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// A worker never runs more roles at once than its pool has slots, and a
// backlog fills every slot. The Sim counts the calls in flight, so this is
// counted, not timed.
func TestPoolBoundsConcurrentRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	const slots, n = 3, 40
	simWorker(b, sim, slots)
	var reqs []subjects.TaskRequest
	for i := range n {
		reqs = append(reqs, withSim(task("wf-pool", fmt.Sprintf("T%d", i)),
			`{"latency_ms": {"planner": 20, "implementer": 20, "judge": 20}}`))
	}
	after := b.submit(reqs...)
	got := b.waitTerminal("wf-pool", after, n)
	require.Len(t, got, n)
	for id, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
	}
	require.EqualValues(t, 3*n, sim.TotalCalls())
	require.EqualValues(t, slots, sim.MaxConcurrent(), "the backlog filled every slot and never more")
	require.Zero(t, sim.InFlight())
}
