package workflow

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// TestGateRewatchesAfterClose: when the gate's watch closes, the gate says
// so (Err, for readiness), lets no caller act on its stale states, watches
// again, reloads every state, and honours a pause issued while it was down
// and one issued after.
func TestGateRewatchesAfterClose(t *testing.T) {
	t.Parallel()
	_, _, _, res := natstest.Provisioned(t, natstest.Sync(time.Second))
	store := state.New(res.State)
	ctx, cancel := context.WithCancel(context.Background())
	hold := make(chan struct{})
	g, done, err := startGate(ctx, res.State, natstest.Quiet(), hold)
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); natstest.Recv(t, done, 30*time.Second) })
	require.NoError(t, g.Err())
	pause := func(wf string) {
		t.Helper()
		_, err := store.WriteWorkflow(ctx, wf, subjects.WorkflowState{State: subjects.StatePaused, UpdatedAt: time.Now().UTC()}, 0)
		require.NoError(t, err)
	}
	paused := func(wf string) bool {
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		ws, ok, err := g.Workflow(wctx, wf)
		return err == nil && ok && ws.State == subjects.StatePaused
	}

	// The watch closes under the gate.
	g.mu.RLock()
	w := g.w
	g.mu.RUnlock()
	require.NoError(t, w.Stop())
	down := func() bool { return errors.Is(g.Err(), ErrWatchDown) }
	require.Eventually(t, down, 10*time.Second, 10*time.Millisecond, "readiness reports the closed watch")

	// While it is down, no caller gets a state it could act on.
	pause("wf-during")
	short, shortCancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, _, err = g.Workflow(short, "wf-during")
	shortCancel()
	require.ErrorIs(t, err, ErrWatchDown)

	// Back: the pause issued while it was down is known, and so is one
	// issued afterwards.
	close(hold)
	require.True(t, paused("wf-during"), "a pause made while the watch was down is honoured")
	require.NoError(t, g.Err())
	pause("wf-after")
	require.Eventually(t, func() bool { return paused("wf-after") }, 10*time.Second, 10*time.Millisecond,
		"a pause made after the watch closed and came back is honoured")
}
