package mergequeue_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/workspace"
)

// An entry whose task no longer waits for it (cancelled, or finished by an
// earlier delivery) is dropped and acked, never merged; the rest of its
// batch is merged.
func TestUnwantedEntryIsDropped(t *testing.T) {
	t.Parallel()
	bd := setup(t, nil, 4)
	base := git(t, bd.clone, "rev-parse", "origin/main")
	keep := bd.branch("keep", base, map[string]string{"keep.txt": "keep\n"})
	gone := bd.branch("gone", base, map[string]string{"gone.txt": "gone\n"})
	bd.enqueue("gone", gone, 1)
	bd.enqueue("keep", keep, 1)

	sink := &timingSink{done: make(chan struct{}), want: 1, unwanted: map[string]bool{"gone": true}}
	m := bd.runMerger(t, sink)
	sink.waitMerged(t, keep, bd.remote)
	_, err := gitTry(bd.remote, "merge-base", "--is-ancestor", gone, "main")
	require.Error(t, err, "the dropped entry is not merged")
	require.Eventually(t, func() bool { return m.Stats().Dropped == 1 }, 30*time.Second, 20*time.Millisecond)
	log := bd.checkSessions()
	var dropped []string
	for _, r := range log {
		dropped = append(dropped, r.Dropped...)
	}
	require.Equal(t, []string{"wf/gone/" + gone}, dropped)
}

// An entry whose task has not parked for it yet (delivery enqueues, then
// writes the parked state) is kept for a later batch, neither merged nor
// dropped, and merged once the task waits for it.
func TestEntryOfATaskNotParkedYetIsKept(t *testing.T) {
	t.Parallel()
	bd := setup(t, nil, 4)
	base := git(t, bd.clone, "rev-parse", "origin/main")
	soon := bd.branch("soon", base, map[string]string{"soon.txt": "soon\n"})
	bd.enqueue("soon", soon, 1)

	sink := &timingSink{done: make(chan struct{}), want: 1, later: map[string]int{"soon": 2}}
	m := bd.runMerger(t, sink)
	sink.waitMerged(t, soon, bd.remote)
	st := m.Stats()
	require.Equal(t, int64(2), st.Deferred, "kept twice for later")
	require.Zero(t, st.Dropped)
	require.Equal(t, int64(1), st.Merged)
	sink.mu.Lock()
	require.Equal(t, 3, sink.asked["soon"], "asked again after each deferral")
	sink.mu.Unlock()
}

// runMerger runs a merger of main (batch 4) with sink until the test ends.
func (bd *bundle) runMerger(t *testing.T, sink mergequeue.Sink) *mergequeue.Merger {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ws, err := workspace.New(workspace.Deps{}, workspace.Config{Repo: bd.remote, Dir: filepath.Join(bd.root, "m")})
	require.NoError(t, err)
	require.NoError(t, ws.Start(ctx))
	m, err := mergequeue.New(ctx, mergequeue.Deps{JS: bd.js, Names: bd.names, Repo: mergequeue.GitRepo{M: ws}, Sink: sink, Holder: "m"},
		mergequeue.Config{Target: "main", Batch: 4, LeaseTTL: 2 * time.Second})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); natstest.Recv(t, done, 30*time.Second); _ = ws.Close() })
	return m
}

// waitMerged waits for the sink's merges and checks that head is in the
// remote's main.
func (s *timingSink) waitMerged(t *testing.T, head, remote string) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		t.Fatalf("%s was not merged", head)
	}
	_, err := gitTry(remote, "merge-base", "--is-ancestor", head, "main")
	require.NoError(t, err)
}
