package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostileAgents: what an agent may leave behind gets a clear error (or,
// for commits on a detached HEAD that descend from the task's head, is
// adopted), and the mirror and another task's worktree stay intact.
func TestHostileAgents(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, func(c *Config) { c.MaxPatchBytes = 64 << 10 })
	ctx := context.Background()

	tests := []struct {
		name    string
		agent   func(t *testing.T, dir string)
		wantErr error
		msg     string
	}{
		{"conflicted index", func(t *testing.T, dir string) {
			task := gitT(t, dir, "rev-parse", "HEAD") // Open leaves HEAD detached
			gitT(t, dir, "checkout", "-q", "-b", "side")
			writeFile(t, dir, "shared.txt", "side\n")
			gitT(t, dir, "commit", "-q", "-am", "side")
			gitT(t, dir, "checkout", "-q", task)
			writeFile(t, dir, "shared.txt", "mine\n")
			gitT(t, dir, "commit", "-q", "-am", "mine")
			_, err := gitTry(dir, "merge", "side")
			require.Error(t, err, "the merge must conflict")
		}, ErrWorkspaceBroken, "unmerged"},
		{"detached HEAD elsewhere", func(t *testing.T, dir string) {
			gitT(t, dir, "checkout", "-q", "--orphan", "other")
			gitT(t, dir, "rm", "-q", "-rf", ".")
			writeFile(t, dir, "alien.txt", "alien\n")
			gitT(t, dir, "add", "-A")
			gitT(t, dir, "commit", "-q", "-m", "unrelated history")
			gitT(t, dir, "checkout", "-q", "--detach")
		}, ErrWorkspaceBroken, "does not descend"},
		{"removed worktree dir", func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(dir))
		}, ErrWorkspaceBroken, "removed"},
		{"removed .git", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, ".git")))
		}, ErrWorkspaceBroken, ".git"},
		{"huge binary", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "huge.bin"), make([]byte, 1<<20), 0o644))
		}, ErrChangeTooLarge, "huge.bin"},
		{"huge committed binary", func(t *testing.T, dir string) {
			big := strings.Repeat("0123456789abcdef\n", 8<<10) // 136 KiB of text: patch over the bound
			writeFile(t, dir, "big.txt", big)
			gitT(t, dir, "add", "big.txt")
			gitT(t, dir, "commit", "-q", "-m", "big")
		}, ErrChangeTooLarge, "patch is over"},
	}

	bystander := openTask(t, m, repo.base, "bystander")
	writeFile(t, bystander.Dir(), "mine.txt", "mine\n")
	before, err := bystander.Commit(ctx, Trailers{Workflow: "wf", Task: "bystander", Attempt: 1}, "")
	require.NoError(t, err)

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := openTask(t, m, repo.base, strings.ReplaceAll(tc.name, " ", "-"))
			tc.agent(t, w.Dir())
			_, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: tc.name, Attempt: 1}, "")
			require.ErrorIs(t, err, tc.wantErr)
			assert.Contains(t, err.Error(), tc.msg)
			require.NoError(t, w.Release(ctx, false))
		})
	}

	// The mirror is sound, the bystander untouched, and the pool reusable.
	gitT(t, m.mirror, "fsck", "--no-progress")
	head, err := bystander.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, before.Head, head)
	assert.Empty(t, gitT(t, bystander.Dir(), "status", "--porcelain"))
	w := openTask(t, m, repo.base, "after")
	writeFile(t, w.Dir(), "ok.txt", "ok\n")
	ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "after", Attempt: 1}, "")
	require.NoError(t, err)
	require.Len(t, ch.Files, 1)
	checkPatch(t, repo.remote, ch, treeOf(t, m, ch.Head))
}

// TestDetachedCommitsAdopted: commits an agent made on a detached HEAD or
// another branch that descend from the task's head are recorded on the
// task's branch, and HEAD is left detached at the recorded head.
func TestDetachedCommitsAdopted(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	ctx := context.Background()
	for _, how := range []string{"--detach", "-b"} {
		t.Run(how, func(t *testing.T) {
			w := openTask(t, m, repo.base, "T"+how)
			args := []string{"checkout", "-q", how}
			if how == "-b" {
				args = append(args, "agent-branch")
			}
			gitT(t, w.Dir(), args...)
			writeFile(t, w.Dir(), "x.txt", "x\n")
			gitT(t, w.Dir(), "add", "x.txt")
			gitT(t, w.Dir(), "commit", "-q", "-m", "detached work")
			writeFile(t, w.Dir(), "y.txt", "y\n")
			ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "T", Attempt: 1}, "")
			require.NoError(t, err)
			assert.Equal(t, 2, ch.Commits)
			assert.Len(t, ch.Files, 2)
			assert.Equal(t, ch.Head, gitT(t, w.Dir(), "rev-parse", "HEAD"))
			_, err = gitTry(w.Dir(), "symbolic-ref", "-q", "HEAD")
			require.Error(t, err, "HEAD is left detached")
			assert.Equal(t, ch.Head, gitT(t, m.mirror, "rev-parse", "refs/heads/"+w.Branch()))
			checkPatch(t, repo.remote, ch, treeOf(t, m, ch.Head))
		})
	}
}
