package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// pushTask opens task on base, writes files, commits and pushes its branch;
// it returns the head.
func pushTask(t *testing.T, m *Manager, base, task string, files map[string]string) string {
	t.Helper()
	ctx := context.Background()
	w := openTask(t, m, base, task)
	for name, body := range files {
		writeFile(t, w.Dir(), name, body)
	}
	ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: task, Attempt: 1}, "")
	require.NoError(t, err)
	require.NoError(t, m.Push(ctx, w.Branch(), ch.Head))
	require.NoError(t, w.Release(ctx, false))
	return ch.Head
}

// The merge queue's git operations: branches merged in a scratch worktree,
// a conflict reported and undone, the target pushed once with a lease on
// its old head, a stale lease refused as ErrTargetMoved.
func TestScratchMergeAndPushTarget(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	m := newManager(t, repo.remote, nil)
	a := pushTask(t, m, repo.base, "A", map[string]string{"shared.txt": "line 1 by A\nline 2\nline 3\n"})
	b := pushTask(t, m, repo.base, "B", map[string]string{"shared.txt": "line 1 by B\nline 2\nline 3\n"})
	c := pushTask(t, m, repo.base, "C", map[string]string{"c.txt": "c\n"})

	main, err := m.TargetHead(ctx, "main")
	require.NoError(t, err)
	require.Equal(t, repo.base, main)
	s, err := m.Scratch(ctx, main)
	require.NoError(t, err)
	defer s.Close(ctx)
	h1, err := s.Merge(ctx, a, "merge A", false)
	require.NoError(t, err)
	_, err = s.Merge(ctx, b, "merge B", false)
	require.ErrorIs(t, err, ErrConflict)
	require.ErrorContains(t, err, "shared.txt")
	head, err := s.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, h1, head, "a conflict leaves the scratch tree where it was")
	h2, err := s.Merge(ctx, c, "merge C", false)
	require.NoError(t, err)
	require.NoError(t, s.Run(ctx, Command{Argv: []string{"test", "-e", "c.txt"}}))
	require.Error(t, s.Run(ctx, Command{Argv: []string{"test", "-e", "BROKEN"}}))

	require.ErrorIs(t, m.PushTarget(ctx, "main", h1, h2), ErrTargetMoved)
	require.NoError(t, m.PushTarget(ctx, "main", main, h2))
	require.Equal(t, h2, gitT(t, repo.remote, "rev-parse", "main"))
	require.True(t, m.Merged(ctx, h2, a))
	require.True(t, m.Merged(ctx, h2, c))
	require.False(t, m.Merged(ctx, h2, b))
	require.Contains(t, gitT(t, repo.remote, "log", "-1", "--format=%B", "main"), MergeTrailer+": "+c)

	// The culprit's branch is deleted only while it is at its head.
	require.ErrorIs(t, m.DeleteBranch(ctx, "drover/wf/B", a), ErrPushRejected)
	require.NoError(t, m.DeleteBranch(ctx, "drover/wf/B", b))
	_, err = gitTry(repo.remote, "rev-parse", "--verify", "refs/heads/drover/wf/B")
	require.Error(t, err)
}

// A rebase replays the branch's commits on the target and marks the last
// one with the trailer naming the branch head. Merged does not trust the
// trailer (an agent can write one): the copies are not the head, and only
// the merge queue's log records that they brought it.
func TestScratchRebase(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	m := newManager(t, repo.remote, nil)
	a := pushTask(t, m, repo.base, "A", map[string]string{"a.txt": "a\n"})
	b := pushTask(t, m, repo.base, "B", map[string]string{"b.txt": "b\n"})
	s, err := m.Scratch(ctx, repo.base)
	require.NoError(t, err)
	defer s.Close(ctx)
	_, err = s.Merge(ctx, a, "", true)
	require.NoError(t, err)
	h, err := s.Merge(ctx, b, "", true)
	require.NoError(t, err)
	require.Equal(t, repo.base, gitT(t, s.Dir(), "rev-parse", "HEAD~2"), "linear history")
	require.Contains(t, gitT(t, s.Dir(), "log", "-1", "--format=%B", h), MergeTrailer+": "+b)
	require.False(t, m.Merged(ctx, h, b), "a trailer is not a record")
	_, err = os.Stat(filepath.Join(s.Dir(), "a.txt"))
	require.NoError(t, err)
}

// A task the merge queue sends back is pinned on the new target head: its
// branch, which does not descend from that head, is taken over because it
// holds only Drover's commits for that task; the worktree starts from the
// new head.
func TestBranchTakenOverOnANewBase(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	m := newManager(t, repo.remote, nil)
	pushTask(t, m, repo.base, "T2", map[string]string{"t2.txt": "first attempt\n"})
	other := pushTask(t, m, repo.base, "T3", map[string]string{"t3.txt": "merged\n"})
	require.NoError(t, m.PushTarget(ctx, "main", repo.base, other))

	w, err := m.Open(ctx, Spec{Workflow: "wf", Task: "T2", Branch: "drover/wf/T2", Base: other})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(w.Dir(), "t3.txt"))
	require.NoError(t, err, "the new attempt starts from the new base")
	_, err = os.Stat(filepath.Join(w.Dir(), "t2.txt"))
	require.True(t, os.IsNotExist(err))
	require.NoError(t, w.Release(ctx, false))

	// A branch holding a human's commit on the old base is still refused.
	src := filepath.Join(t.TempDir(), "src")
	gitT(t, filepath.Dir(src), "clone", "-q", repo.remote, src)
	gitT(t, src, "checkout", "-q", repo.base)
	writeFile(t, src, "human.txt", "a human's work\n")
	gitT(t, src, "add", "-A")
	gitT(t, src, "commit", "-q", "-m", "human")
	gitT(t, src, "push", "-q", "origin", "HEAD:refs/heads/drover/wf/H")
	_, err = m.TargetHead(ctx, "main") // fetches
	require.NoError(t, err)
	_, err = m.Open(ctx, Spec{Workflow: "wf", Task: "H", Branch: "drover/wf/H", Base: other})
	require.ErrorIs(t, err, ErrBranchExists)
}
