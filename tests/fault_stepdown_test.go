package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/subjects"
)

// fullFaults gates the heavy fault rows: CI runs one representative of
// each (the leader kill of row 9), DROVER_FAULTS=full runs them all.
func fullFaults(t *testing.T) {
	t.Helper()
	if os.Getenv("DROVER_FAULTS") != "full" {
		t.Skip("a heavy fault row: set DROVER_FAULTS=full to run it (CI runs TestClusterKillStreamLeader for row 9)")
	}
}

// Row 9, stepdown variant: under load on a 3-node cluster, the leaders of
// the tasks stream, its consumer and the state bucket are asked to step
// down ($JS.API.*.LEADER.STEPDOWN), one after the other. Work resumes by
// itself within a bound and every task completes exactly once (oracle O).
func TestClusterLeaderStepdown(t *testing.T) {
	fullFaults(t)
	t.Parallel()
	_, b := startCluster(t)
	wa, wb := b.startClusterWorker("A"), b.startClusterWorker("B")
	ctx := context.Background()
	const wf, n = "wf-stepdown", 300
	var reqs []subjects.TaskRequest
	var ids []string
	for i := range n {
		reqs = append(reqs, withSim(task(wf, fmt.Sprintf("T%d", i)), `{"latency_ms": {"implementer": 20}}`))
		ids = append(ids, fmt.Sprintf("T%d", i))
	}
	after := b.submit(reqs...)
	followCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	seen := 0
	require.NoError(t, producer.FollowTerminal(followCtx, b.js, b.names, wf, after, func(producer.Terminal) bool {
		seen++
		return seen < n/5
	}))
	began := time.Now()
	for _, subj := range []string{
		"$JS.API.STREAM.LEADER.STEPDOWN." + b.names.TasksStream(),
		"$JS.API.CONSUMER.LEADER.STEPDOWN." + b.names.TasksStream() + "." + b.names.Consumer("default"),
		"$JS.API.STREAM.LEADER.STEPDOWN.KV_" + b.names.StateBucket(),
	} {
		msg, err := b.nc.Request(subj, nil, 10*time.Second)
		require.NoError(t, err, subj)
		var resp struct {
			Success bool `json:"success"`
		}
		require.NoError(t, json.Unmarshal(msg.Data, &resp), string(msg.Data))
		require.True(t, resp.Success, "%s: %s", subj, msg.Data)
	}
	got := b.waitAll(wf, after, ids, wa, wb)
	requireAllCompleted(t, got)
	done := time.Since(began)
	require.Less(t, done, 60*time.Second, "all done within a bound after the stepdowns")
	evs := b.quiet(wf, n)
	t.Logf("three leader stepdowns after %d of %d completions; longest pause between completions %s; all done %s after the first stepdown",
		seen, n, longestPause(evs, began).Round(10*time.Millisecond), done.Round(100*time.Millisecond))
}
