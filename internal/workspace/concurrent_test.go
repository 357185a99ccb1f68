package workspace

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSixteenTasksAtPoolSixteen: 16 tasks at once on one worker, each
// editing its own file and one shared file: one fetch for their bases, 16
// worktrees, 16 branches each holding exactly its own change from the base,
// pushed in at most ceil(16/batch) pushes counted by the remote.
func TestSixteenTasksAtPoolSixteen(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	pushes := countingRemote(t, repo.remote)
	const n, batch = 16, 8
	// Batches go when they are full: with a push delay no run can reach, the
	// count of pushes does not depend on how fast the 16 tasks get to theirs
	// (with 2 s, two CI runs on one machine made it three).
	m := newManager(t, repo.remote, func(c *Config) {
		c.MaxWorktrees, c.Push, c.PushBatch, c.PushDelay = n, true, batch, time.Hour
	})
	fetches := m.Stats().Fetches
	ctx := context.Background()

	var wg sync.WaitGroup
	heads := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			heads[i], errs[i] = runTask(ctx, m, fmt.Sprintf("T%02d", i))
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "task %d", i)
	}
	s := m.Stats()
	assert.LessOrEqual(t, s.Fetches-fetches, int64(n), "at most one fetch per ResolveBase")
	assert.LessOrEqual(t, pushes(), (n+batch-1)/batch)
	assert.Equal(t, 0, s.Open)
	assert.LessOrEqual(t, s.Worktrees, n)
	for i := range n {
		task := fmt.Sprintf("T%02d", i)
		branch := "drover/wf/" + task
		assert.Equal(t, heads[i], gitT(t, repo.remote, "rev-parse", "refs/heads/"+branch))
		assert.Equal(t, task+".txt\nshared.txt", gitT(t, repo.remote, "diff", "--name-only", repo.base, heads[i]))
		assert.Equal(t, "shared by "+task, gitT(t, repo.remote, "show", heads[i]+":shared.txt"))
		assert.Equal(t, repo.base, gitT(t, repo.remote, "rev-parse", heads[i]+"^"))
	}
}

// runTask is one task's life on a worker: resolve the base, open, let the
// "agent" edit, commit, push, release.
func runTask(ctx context.Context, m *Manager, task string) (string, error) {
	base, err := m.ResolveBase(ctx)
	if err != nil {
		return "", err
	}
	branch, err := m.Branch("wf", task, "")
	if err != nil {
		return "", err
	}
	w, err := m.Open(ctx, Spec{Workflow: "wf", Task: task, Branch: branch, Base: base})
	if err != nil {
		return "", err
	}
	defer func() { _ = w.Release(ctx, false) }() // the test is over: what is left is removed with its directory
	if err := os.WriteFile(w.Dir()+"/"+task+".txt", []byte(task+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(w.Dir()+"/shared.txt", []byte("shared by "+task+"\n"), 0o644); err != nil {
		return "", err
	}
	ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: task, Attempt: 1}, "")
	if err != nil {
		return "", err
	}
	if len(ch.Files) != 2 {
		return "", fmt.Errorf("%s: %d files changed, want 2", task, len(ch.Files))
	}
	return ch.Head, m.Push(ctx, w.Branch(), ch.Head)
}

// TestReady: reachable, then (the cached answer expired) not, naming the
// repository.
func TestReady(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	require.NoError(t, m.Ready(context.Background()))
	require.NoError(t, os.Rename(repo.remote, repo.remote+".away"))
	require.NoError(t, m.Ready(context.Background()), "the answer is cached")
	m.readyMu.Lock()
	m.readyAt = time.Time{}
	m.readyMu.Unlock()
	err := m.Ready(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unreachable")
}
