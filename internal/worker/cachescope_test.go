package worker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/subjects"
)

// The same task in a second workflow: with the cache scoped to the fleet
// it is a hit (the first workflow's patch, no agent run); scoped to the
// workflow, the second workflow's agent runs and its change is its own.
func TestWorkspaceCacheScope(t *testing.T) {
	for _, tc := range []struct {
		scope     cache.Scope
		implCalls int
		cached    bool
	}{
		{cache.ScopeFleet, 1, true},
		{cache.ScopeWorkflow, 2, false},
	} {
		t.Run(string(tc.scope), func(t *testing.T) {
			b := newWSBundle(t)
			b.cacheScope = tc.scope
			a := &agent{t: t, edit: editTask}
			b.start(t, a.set(), t.TempDir(), true, 5*time.Second)
			task := subjects.TaskRequest{ID: "T1", Scope: "one"}
			for _, wf := range []string{"wf-a", "wf-b"} {
				require.Equal(t, subjects.EventTaskCompleted, b.submit(t, wf, task)["T1"].EventType)
			}
			require.Equal(t, tc.implCalls, a.implCalls())
			ev := b.events(t, "wf-b", "T1", subjects.EventImplementerChange)
			require.Len(t, ev, 1)
			require.Equal(t, tc.cached, ev[0].Cached)
		})
	}
}
