package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordTwoAttempts records two attempts of task T1 on m and returns them.
func recordTwoAttempts(t *testing.T, m *Manager, base string) (Change, Change) {
	t.Helper()
	ctx := context.Background()
	w := openTask(t, m, base, "T1")
	writeFile(t, w.Dir(), "x.txt", "x\n")
	require.NoError(t, os.Remove(filepath.Join(w.Dir(), "a/one.txt")))
	first, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "")
	require.NoError(t, err)
	writeFile(t, w.Dir(), "shared.txt", "changed\n")
	require.NoError(t, os.WriteFile(filepath.Join(w.Dir(), "bin.dat"), []byte{0, 9, 8, 7, 0}, 0o644))
	second, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 2}, "")
	require.NoError(t, err)
	require.NoError(t, w.Release(ctx, false))
	return first, second
}

// TestReplayOnAnotherWorker: a worker with its own directory (another pod)
// rebuilds the task's worktree from the base plus the recorded patches: the
// same tree, one commit per attempt, and the work continues from there.
func TestReplayOnAnotherWorker(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	first, second := recordTwoAttempts(t, newManager(t, repo.remote, nil), repo.base)
	wantTree := gitT(t, filepath.Dir(repo.remote), "--git-dir", repo.remote, "rev-parse", repo.base+"^{tree}") // sanity: base known
	require.NotEmpty(t, wantTree)

	other := newManager(t, repo.remote, nil)
	branch, err := other.Branch("wf", "T1", "")
	require.NoError(t, err)
	w, err := other.Open(ctx, Spec{Workflow: "wf", Task: "T1", Branch: branch, Base: repo.base, Replay: []Patch{
		{Attempt: 1, Head: first.Head, Patch: first.Patch},
		{Attempt: 2, Head: second.Head, Patch: second.Patch},
	}})
	require.NoError(t, err)
	defer func() { _ = w.Release(ctx, false) }() // the test is over: what is left is removed with its directory
	diff, err := w.Diff(ctx)
	require.NoError(t, err)
	assert.Equal(t, second.Patch, diff.Patch)
	assert.Equal(t, "2", gitT(t, w.Dir(), "rev-list", "--count", repo.base+"..HEAD"))
	assert.Empty(t, gitT(t, w.Dir(), "status", "--porcelain"))
	assert.NoFileExists(t, filepath.Join(w.Dir(), "a/one.txt"))

	writeFile(t, w.Dir(), "z.txt", "z\n")
	third, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 3}, "")
	require.NoError(t, err)
	assert.Len(t, third.Files, 5)
	checkPatch(t, repo.remote, third, treeOf(t, other, third.Head))
}

// TestReplaySameWorker: on the worker that recorded it, Open goes straight
// to the recorded head.
func TestReplaySameWorker(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	first, second := recordTwoAttempts(t, m, repo.base)
	branch, _ := m.Branch("wf", "T1", "")
	w, err := m.Open(context.Background(), Spec{Workflow: "wf", Task: "T1", Branch: branch, Base: repo.base,
		Replay: []Patch{{Attempt: 1, Head: first.Head, Patch: first.Patch}, {Attempt: 2, Head: second.Head, Patch: second.Patch}}})
	require.NoError(t, err)
	defer func() { _ = w.Release(context.Background(), false) }() // the test is over: what is left is removed with its directory
	head, err := w.Head(context.Background())
	require.NoError(t, err)
	assert.Equal(t, second.Head, head)
}

// TestApplyCacheHit: a recorded patch applied in a fresh worktree of another
// task (a cache hit under a new workflow) gives the same tree; a patch that
// does not apply, or does not give the recorded tree, is
// ErrPatchDoesNotApply and leaves the branch where it was.
func TestApplyCacheHit(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	_, rec := recordTwoAttempts(t, newManager(t, repo.remote, nil), repo.base)
	m := newManager(t, repo.remote, nil)

	w := openTask(t, m, repo.base, "hit")
	ch, err := w.Apply(ctx, Patch{Attempt: 1, Head: rec.Head, Patch: rec.Patch}, Trailers{Workflow: "wf2", Task: "hit", Attempt: 1, EventID: "E"})
	require.NoError(t, err)
	assert.False(t, ch.Empty)
	assert.Equal(t, rec.Patch, ch.Patch)
	assert.Equal(t, rec.Files, ch.Files)
	assert.Empty(t, gitT(t, w.Dir(), "status", "--porcelain"))
	checkPatch(t, repo.remote, ch, treeOf(t, m, ch.Head))
	assert.Contains(t, gitT(t, m.mirror, "log", "-1", "--format=%B", ch.Head), "Drover-Workflow: wf2")

	tests := []struct {
		name  string
		patch []byte
	}{
		{"garbage", []byte("not a patch\n")},
		{"wrong preimage", []byte("diff --git a/shared.txt b/shared.txt\n--- a/shared.txt\n+++ b/shared.txt\n@@ -1 +1 @@\n-nope\n+yes\n")},
		{"not the recorded tree", modifyPatch(rec.Patch)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := openTask(t, m, repo.base, "miss-"+tc.name[:3])
			_, err := w.Apply(ctx, Patch{Attempt: 1, Head: "0123456789012345678901234567890123456789", Patch: tc.patch}, Trailers{Workflow: "wf2", Task: "miss", Attempt: 1})
			require.ErrorIs(t, err, ErrPatchDoesNotApply)
			head, err := w.Head(ctx)
			require.NoError(t, err)
			assert.Equal(t, repo.base, head)
		})
	}
}

// modifyPatch changes an added line of the patch and drops its index line's
// check: it still applies but gives other blobs than the ones it names.
func modifyPatch(p []byte) []byte {
	out := []byte{}
	for _, line := range splitLines(p) {
		if line == "+changed" {
			line = "+tampered"
		}
		out = append(out, line+"\n"...)
	}
	return out
}

func splitLines(p []byte) []string {
	var lines []string
	start := 0
	for i, c := range p {
		if c == '\n' {
			lines = append(lines, string(p[start:i]))
			start = i + 1
		}
	}
	return lines
}
