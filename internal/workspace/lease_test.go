package workspace

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A push leased on the head Drover recorded for a task replaces that head
// (a redelivery pushing its own commit of the same change); a branch that
// holds anything else is refused, and a branch the remote lacks is pushed.
func TestPushLease(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	// Two workers' commits of one task's branch: the first pushed, the
	// second made by a redelivery after a crash.
	commit := func(m *Manager, task, content string) (string, string) {
		w := openTask(t, m, repo.base, task)
		writeFile(t, w.Dir(), task+".txt", content)
		ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: task, Attempt: 1}, "")
		require.NoError(t, err)
		return w.Branch(), ch.Head
	}
	m1 := newManager(t, repo.remote, func(c *Config) { c.Push = true })
	m2 := newManager(t, repo.remote, func(c *Config) { c.Push = true })
	branch, h1 := commit(m1, "T0", "first\n")
	_, h2 := commit(m2, "T0", "second\n")
	require.NotEqual(t, h1, h2)
	require.NoError(t, m1.Push(ctx, branch, h1))
	remoteHead := func() string { return gitT(t, repo.remote, "rev-parse", "refs/heads/"+branch) }

	require.ErrorIs(t, m2.Push(ctx, branch, h2), ErrPushRejected, "without a lease: not a fast-forward")
	require.ErrorIs(t, m2.PushLease(ctx, branch, h2, h2), ErrPushRejected, "a lease on the head itself is none")
	require.Equal(t, h1, remoteHead())
	require.NoError(t, m2.PushLease(ctx, branch, h2, h1, repo.base), "the lease on a recorded head holds")
	require.Equal(t, h2, remoteHead())
	require.NoError(t, m2.PushLease(ctx, branch, h2, h1), "already there")
	require.ErrorIs(t, m1.PushLease(ctx, branch, h1, repo.base), ErrPushRejected, "moved since: refused")
	require.Equal(t, h2, remoteHead())

	other, h3 := commit(m1, "T1", "third\n")
	require.NoError(t, m1.PushLease(ctx, other, h3, h1), "a branch the remote lacks is pushed")
	require.Equal(t, h3, gitT(t, repo.remote, "rev-parse", "refs/heads/"+other))
	require.Error(t, m1.PushLease(ctx, other, h3, "not-a-commit"))
}
