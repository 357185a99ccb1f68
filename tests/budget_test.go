package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/subjects"
)

// TestBudgetTwoWorkerProcesses runs one workflow with a budget on two
// `drover serve` processes whose exec agents report their cost: the
// workflow is paused with the reason once its spend reaches the budget,
// and the spend the audit record shows exceeds the budget by at most the
// roles the two workers can run at once.
func TestBudgetTwoWorkerProcesses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	script, err := filepath.Abs(filepath.Join("testdata", "priced_agent.sh"))
	require.NoError(t, err)
	role := func(name string) string {
		return fmt.Sprintf("  %s:\n    runner: exec\n    exec: {argv: [sh, %q, %s], inherit: [PATH]}\n", name, script, name)
	}
	cfg := filepath.Join(t.TempDir(), "drover.yaml")
	sandbox := fmt.Sprintf("sandbox: {read_only: [%q]}\n", filepath.Dir(script)) // serve contains the agent: show it its script
	require.NoError(t, os.WriteFile(cfg, []byte("roles:\n"+role("planner")+role("implementer")+role("judge")+sandbox), 0o600))
	const concurrency, limit, n = 3, 2.0, 30
	for range 2 {
		b.startProc("--config", cfg, "--concurrency", fmt.Sprint(concurrency), "--retry-backoff", "50ms", "--retry-backoff-max", "200ms")
	}
	ctx := context.Background()
	for i := range n {
		r := task("capped", fmt.Sprintf("T%02d", i))
		r.Metadata = map[string]json.RawMessage{ledger.MetaWorkflowBudget: json.RawMessage(fmt.Sprint(limit))}
		_, err := producer.Publish(ctx, b.js, b.names, "default", r)
		require.NoError(t, err)
	}
	kv, err := b.js.KeyValue(ctx, b.names.StateBucket())
	require.NoError(t, err)
	paused := func() (subjects.WorkflowState, bool) {
		e, err := kv.Get(ctx, subjects.StateKey("capped", subjects.Reserved))
		if err != nil {
			return subjects.WorkflowState{}, false
		}
		var ws subjects.WorkflowState
		return ws, json.Unmarshal(e.Value(), &ws) == nil && ws.State == subjects.StatePaused
	}
	require.Eventually(t, func() bool { _, ok := paused(); return ok }, 60*time.Second, 20*time.Millisecond, "the workflow is paused")
	ws, _ := paused()
	assert.Contains(t, ws.Reason, "workflow budget exceeded")
	// Every request is settled (run, or parked by the pause): no role runs.
	cons, err := b.js.Consumer(ctx, b.names.TasksStream(), b.names.Consumer("default"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	}, 60*time.Second, 50*time.Millisecond, "every request settled")

	var usd float64
	roles := 0
	for _, ev := range b.events("capped") {
		if c, ok := ledger.FromMetadata(ev.Metadata); ok && ev.Actor != subjects.ActorSystem {
			usd += c.USD
			roles++
		}
	}
	inFlight := 2 * concurrency * 0.5 // every slot of both workers, at the dearest role's cost
	t.Logf("spent $%.2f over %d role calls; budget $%.2f; at most %d roles in flight", usd, roles, limit, 2*concurrency)
	assert.GreaterOrEqual(t, usd, limit, "the budget was reached")
	assert.LessOrEqual(t, usd, limit+inFlight+1e-9, "overspent by more than the roles in flight")
}
