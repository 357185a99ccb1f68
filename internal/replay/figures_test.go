package replay_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/replay"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// TestReplayFigures measures replay and counterfactual throughput with the
// sim over DROVER_REPLAY_TASKS tasks (e.g. 1000), for docs/performance.md; without
// the variable it is skipped (not for CI).
func TestReplayFigures(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("DROVER_REPLAY_TASKS"))
	if n <= 0 {
		t.Skip("set DROVER_REPLAY_TASKS=1000 to run")
	}
	f := setup(t)
	var reqs []subjects.TaskRequest
	for i := range n {
		sim := ""
		if i%4 == 0 {
			sim = `{"judge_rejects":1}`
		}
		reqs = append(reqs, task("fig", fmt.Sprintf("T%05d", i), sim))
	}
	start := time.Now()
	f.run("fig", reqs)
	orig := time.Since(start)
	rep := f.rerun(replay.Options{Source: "fig", As: "fig-replay"})
	require.Equal(t, n, rep.Summary.Matching)
	judge := runner.NewSim(runner.SimOptions{})
	cf := f.rerun(replay.Options{Source: "fig", As: "fig-cf", Role: subjects.RoleJudge, Live: judge})
	require.Equal(t, n, cf.Summary.Tasks)
	t.Logf("%d tasks (1 in 4 rejected once), concurrency 8: original run %.0f tasks/s; replay %.0f tasks/s (%d runner calls); judge counterfactual %.0f tasks/s (%d judge calls, agreement %.1f%%)",
		n, float64(n)/orig.Seconds(), float64(n)/rep.Elapsed.Seconds(), rep.LiveCalls,
		float64(n)/cf.Elapsed.Seconds(), cf.LiveCalls, 100*cf.Summary.AgreementRate)
}
