package workspace

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommitRecordsEveryKindOfAgent: the agent that edits, that commits
// itself, that changes nothing, that deletes a file, that writes a binary:
// each change is recorded with its files, and its patch applied with
// `git apply --index` on the base reproduces the branch's tree.
func TestCommitRecordsEveryKindOfAgent(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	ctx := context.Background()
	bin := make([]byte, 4096)
	_, _ = rand.Read(bin)

	tests := []struct {
		name    string
		agent   func(t *testing.T, dir string)
		empty   bool
		commits int
		files   map[string]FileStat // path -> want (Path ignored)
	}{
		{"edits", func(t *testing.T, dir string) {
			writeFile(t, dir, "shared.txt", "line 1\nline two\nline 3\nline 4\n")
			writeFile(t, dir, "new/file.txt", "new\n")
		}, false, 1, map[string]FileStat{
			"shared.txt":   {Added: 2, Removed: 1, Status: "M"},
			"new/file.txt": {Added: 1, Status: "A"},
		}},
		{"commits itself", func(t *testing.T, dir string) {
			writeFile(t, dir, "a/one.txt", "one\nmore\n")
			gitT(t, dir, "add", "-A")
			gitT(t, dir, "commit", "-q", "-m", "agent's own commit")
			writeFile(t, dir, "a/two.txt", "two\nmore\n") // and leaves one edit uncommitted
		}, false, 2, map[string]FileStat{
			"a/one.txt": {Added: 1, Status: "M"},
			"a/two.txt": {Added: 1, Status: "M"},
		}},
		{"commits everything itself", func(t *testing.T, dir string) {
			writeFile(t, dir, "a/one.txt", "uno\n")
			gitT(t, dir, "commit", "-q", "-am", "agent's own commit")
		}, false, 2, map[string]FileStat{"a/one.txt": {Added: 1, Removed: 1, Status: "M"}}},
		{"changes nothing", func(t *testing.T, dir string) {}, true, 0, map[string]FileStat{}},
		{"deletes a file", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "a/two.txt")))
		}, false, 1, map[string]FileStat{"a/two.txt": {Removed: 1, Status: "D"}}},
		{"writes a binary", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "img.bin"), bin, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "bin.dat"), bin[:100], 0o644))
		}, false, 1, map[string]FileStat{
			"img.bin": {Binary: true, Status: "A"},
			"bin.dat": {Binary: true, Status: "M"},
		}},
		{"ignored files stay out", func(t *testing.T, dir string) {
			writeFile(t, dir, ".gitignore", "*.log\n")
			writeFile(t, dir, "debug.log", "noise\n")
		}, false, 1, map[string]FileStat{".gitignore": {Added: 1, Status: "A"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := openTask(t, m, repo.base, strings.ReplaceAll(tc.name, " ", "-"))
			tc.agent(t, w.Dir())
			ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: tc.name, Attempt: 1, EventID: "ev1"}, "the agent's summary")
			require.NoError(t, err)
			assert.Equal(t, repo.base, ch.Base)
			assert.Equal(t, tc.empty, ch.Empty)
			assert.Equal(t, tc.commits, ch.Commits)
			head, err := w.Head(ctx)
			require.NoError(t, err)
			assert.Equal(t, head, ch.Head)
			require.Len(t, ch.Files, len(tc.files), "%+v", ch.Files)
			for path, want := range tc.files {
				got, err := fileStat(ch.Files, path)
				require.NoError(t, err)
				want.Path = path
				assert.Equal(t, want, got)
			}
			checkPatch(t, repo.remote, ch, treeOf(t, m, ch.Head))

			diff, err := w.Diff(ctx)
			require.NoError(t, err)
			assert.Equal(t, ch.Patch, diff.Patch)
			assert.Equal(t, ch.Files, diff.Files)
		})
	}
}

// TestCommitTrailers: Drover's commit carries the four trailers; the agent's
// message cannot add Drover- trailers of its own.
func TestCommitTrailers(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	w := openTask(t, m, repo.base, "T1")
	writeFile(t, w.Dir(), "x.txt", "x\n")
	ch, err := w.Commit(context.Background(), Trailers{Workflow: "wf", Task: "T1", Attempt: 2, EventID: "E-42"},
		"Add x\n\nDrover-Task: forged\n\x1b[31mred\x1b[0m")
	require.NoError(t, err)
	msg := gitT(t, m.mirror, "log", "-1", "--format=%B", ch.Head)
	assert.NotContains(t, msg, "forged")
	assert.NotContains(t, msg, "\x1b")
	got := gitT(t, m.mirror, "log", "-1", "--format=%(trailers:only,unfold)", ch.Head)
	assert.Equal(t, "Drover-Workflow: wf\nDrover-Task: T1\nDrover-Attempt: 2\nDrover-Event: E-42", got)
	assert.True(t, strings.HasPrefix(msg, "Add x"))
}

// TestSecondAttemptContinues: the second Commit builds on the first; the
// change stays cumulative from the base, Empty only when nothing changed
// since the previous head.
func TestSecondAttemptContinues(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	ctx := context.Background()
	w := openTask(t, m, repo.base, "T1")
	writeFile(t, w.Dir(), "x.txt", "x\n")
	first, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "")
	require.NoError(t, err)
	writeFile(t, w.Dir(), "y.txt", "y\n")
	second, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 2}, "")
	require.NoError(t, err)
	assert.Equal(t, first.Head, gitT(t, m.mirror, "rev-parse", second.Head+"^"))
	assert.Len(t, second.Files, 2)
	checkPatch(t, repo.remote, second, treeOf(t, m, second.Head))
	third, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 3}, "")
	require.NoError(t, err)
	assert.True(t, third.Empty)
	assert.Equal(t, second.Head, third.Head)
	assert.Equal(t, second.Patch, third.Patch)
}
