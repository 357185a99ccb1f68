package workspace

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evilScript writes a script that appends a line to the file marker when
// run (as an fsmonitor hook, a hook, a filter or a textconv: it copies its
// stdin to its stdout) and returns its path.
func evilScript(t *testing.T, marker string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "evil.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho \"ran $0 $*\" >> '"+marker+"'\ncat\n"), 0o755))
	return p
}

// hostileConfig is a git config that runs script wherever git would.
func hostileConfig(script, hooks string) string {
	return "[core]\n\tbare = false\n\tfsmonitor = " + script + "\n\thooksPath = " + hooks + "\n\tpager = " + script +
		"\n[filter \"evil\"]\n\tclean = " + script + "\n\tsmudge = " + script + "\n\trequired = true\n" +
		"[diff \"evil\"]\n\ttextconv = " + script + "\n[diff]\n\texternal = " + script + "\n"
}

// hostileRepo makes a bare clone of remote whose HEAD is at head and whose
// config runs script: the git dir an agent would point Drover's git at.
func hostileRepo(t *testing.T, remote, head, script string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "evil.git")
	gitT(t, filepath.Dir(dir), "clone", "-q", "--bare", remote, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "HEAD"), []byte(head+"\n"), 0o644))
	hooks := filepath.Join(dir, "evil-hooks")
	require.NoError(t, os.MkdirAll(hooks, 0o755))
	for _, h := range []string{"pre-commit", "post-index-change", "reference-transaction", "post-checkout", "pre-push"} {
		require.NoError(t, os.Symlink(script, filepath.Join(hooks, h)))
	}
	f, err := os.OpenFile(filepath.Join(dir, "config"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(hostileConfig(script, hooks))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return dir
}

// TestGitTakesNoAgentConfig: an agent that points the worktree's .git or
// its admin directory's commondir at a repository of its own, writes
// config files into its admin directory or its private HOME, names a
// filter in .gitattributes, or leaves a nested repository never gets a
// program run by Drover's git; where the links changed or a repository is
// nested the attempt fails with a clear reason. Another task's workspace
// is untouched and the pool stays usable.
func TestGitTakesNoAgentConfig(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	ctx := context.Background()

	bystander := openTask(t, m, repo.base, "bystander")
	writeFile(t, bystander.Dir(), "mine.txt", "mine\n")
	before, err := bystander.Commit(ctx, Trailers{Workflow: "wf", Task: "bystander", Attempt: 1}, "")
	require.NoError(t, err)

	tests := []struct {
		name string
		// agent attacks the worktree dir of workspace w; script is the
		// program it wants run.
		agent func(t *testing.T, w *Workspace, script string)
		// wantErr is the error Commit returns (nil: it records); msg is
		// in it.
		wantErr error
		msg     string
		// direct runs Drover's git straight in the worktree, past the
		// link check, to show it still reads nothing the agent wrote.
		direct bool
	}{
		{"dot git points at the agent's repository", func(t *testing.T, w *Workspace, script string) {
			evil := hostileRepo(t, repo.remote, repo.base, script)
			writeFile(t, w.Dir(), "x.txt", "x\n")
			require.NoError(t, os.WriteFile(filepath.Join(w.Dir(), ".git"), []byte("gitdir: "+evil+"\n"), 0o644))
		}, ErrWorkspaceBroken, "the worktree's .git file", true},
		{"dot git is a symbolic link", func(t *testing.T, w *Workspace, script string) {
			evil := hostileRepo(t, repo.remote, repo.base, script)
			require.NoError(t, os.Remove(filepath.Join(w.Dir(), ".git")))
			require.NoError(t, os.Symlink(evil, filepath.Join(w.Dir(), ".git")))
		}, ErrWorkspaceBroken, "the worktree's .git file", true},
		{"commondir points at the agent's repository", func(t *testing.T, w *Workspace, script string) {
			evil := hostileRepo(t, repo.remote, repo.base, script)
			writeFile(t, w.Dir(), "x.txt", "x\n")
			require.NoError(t, os.WriteFile(filepath.Join(m.git.adminDir(w.Dir()), "commondir"), []byte(evil+"\n"), 0o644))
		}, ErrWorkspaceBroken, "commondir", true},
		{"config files in the admin directory and the agent's HOME", func(t *testing.T, w *Workspace, script string) {
			admin := m.git.adminDir(w.Dir())
			hooks := filepath.Join(t.TempDir(), "hooks")
			require.NoError(t, os.MkdirAll(hooks, 0o755))
			require.NoError(t, os.Symlink(script, filepath.Join(hooks, "post-index-change")))
			for _, f := range []string{filepath.Join(admin, "config"), filepath.Join(admin, "config.worktree"),
				filepath.Join(m.homeDir(w.Dir()), ".gitconfig"), filepath.Join(w.Dir(), ".gitconfig")} {
				require.NoError(t, os.MkdirAll(filepath.Dir(f), 0o755))
				require.NoError(t, os.WriteFile(f, []byte(hostileConfig(script, hooks)), 0o644))
			}
			writeFile(t, w.Dir(), ".gitattributes", "* filter=evil diff=evil\n")
			writeFile(t, w.Dir(), "x.txt", "x\n")
		}, nil, "", true},
		{"nested repository", func(t *testing.T, w *Workspace, script string) {
			sub := filepath.Join(w.Dir(), "vendor", "sub")
			require.NoError(t, os.MkdirAll(sub, 0o755))
			gitT(t, sub, "init", "-q")
			writeFile(t, sub, "f.txt", "f\n")
			gitT(t, sub, "add", "-A")
			gitT(t, sub, "commit", "-q", "-m", "nested")
			gitT(t, sub, "config", "core.fsmonitor", script)
		}, ErrWorkspaceBroken, "nested git repository", false},
		{"nested repository staged as a gitlink", func(t *testing.T, w *Workspace, script string) {
			sub := filepath.Join(w.Dir(), "sub")
			require.NoError(t, os.MkdirAll(sub, 0o755))
			gitT(t, sub, "init", "-q")
			writeFile(t, sub, "f.txt", "f\n")
			gitT(t, sub, "add", "-A")
			gitT(t, sub, "commit", "-q", "-m", "nested")
			gitT(t, sub, "config", "core.fsmonitor", script)
			gitT(t, w.Dir(), "add", "sub")
		}, ErrWorkspaceBroken, "nested git repository", false},
		{"nested repository committed as a gitlink", func(t *testing.T, w *Workspace, script string) {
			sub := filepath.Join(w.Dir(), "sub")
			require.NoError(t, os.MkdirAll(sub, 0o755))
			gitT(t, sub, "init", "-q")
			writeFile(t, sub, "f.txt", "f\n")
			gitT(t, sub, "add", "-A")
			gitT(t, sub, "commit", "-q", "-m", "nested")
			gitT(t, sub, "config", "core.fsmonitor", script)
			gitT(t, w.Dir(), "add", "sub")
			gitT(t, w.Dir(), "commit", "-q", "-m", "add a submodule")
		}, ErrWorkspaceBroken, "nested git repository", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "marker")
			script := evilScript(t, marker)
			w := openTask(t, m, repo.base, strings.ReplaceAll(tc.name, " ", "-"))
			tc.agent(t, w, script)
			if tc.direct {
				for _, args := range [][]string{
					{"status", "--porcelain"},
					{"add", "-A"},
					{"diff", "--cached", "--stat"},
					{"checkout", "-q", "-f", "--detach", repo.base},
				} {
					_, _ = m.git.run(ctx, gitCall{dir: w.Dir(), args: args})
				}
			}
			ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: tc.name, Attempt: 1}, "")
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Contains(t, err.Error(), tc.msg)
			} else {
				require.NoError(t, err)
				checkPatch(t, repo.remote, ch, treeOf(t, m, ch.Head))
			}
			require.NoError(t, w.Release(ctx, false))
			_, err = os.Stat(marker)
			require.ErrorIs(t, err, os.ErrNotExist, "a program the agent named was run by Drover's git")
		})
	}

	gitT(t, m.mirror, "fsck", "--no-progress")
	head, err := bystander.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, before.Head, head)
	after := openTask(t, m, repo.base, "after")
	writeFile(t, after.Dir(), "ok.txt", "ok\n")
	ch, err := after.Commit(ctx, Trailers{Workflow: "wf", Task: "after", Attempt: 1}, "")
	require.NoError(t, err)
	require.Len(t, ch.Files, 1)
	checkPatch(t, repo.remote, ch, treeOf(t, m, ch.Head))
}

// TestWorktreeConfigNeverRead: a mirror that had extensions.worktreeConfig
// on (an operator's sparse checkout) gets it off at Start, so a filter an
// agent defines in its worktree's config.worktree is never run.
func TestWorktreeConfigNeverRead(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	dir := filepath.Join(t.TempDir(), "ws")
	m := newManager(t, repo.remote, func(c *Config) { c.Dir = dir })
	require.NoError(t, m.Close())
	gitT(t, m.mirror, "config", "extensions.worktreeConfig", "true")
	m = newManager(t, repo.remote, func(c *Config) { c.Dir = dir })

	marker := filepath.Join(t.TempDir(), "marker")
	script := evilScript(t, marker)
	w := openTask(t, m, repo.base, "T1")
	require.NoError(t, os.WriteFile(filepath.Join(m.git.adminDir(w.Dir()), "config.worktree"), []byte(hostileConfig(script, t.TempDir())), 0o644))
	writeFile(t, w.Dir(), ".gitattributes", "* filter=evil\n")
	writeFile(t, w.Dir(), "x.txt", "x\n")
	ch, err := w.Commit(context.Background(), Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "")
	require.NoError(t, err)
	assert.Len(t, ch.Files, 2)
	_, err = os.Stat(marker)
	require.ErrorIs(t, err, os.ErrNotExist, "the agent's filter ran")
}

// TestAgentCommitsUnderDroversCommit: an agent that committed everything
// itself gets Drover's commit with the trailers on top, its own commit kept
// as it is beneath; an agent's commit whose message holds a Drover- trailer
// line fails the attempt and moves nothing.
func TestAgentCommitsUnderDroversCommit(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	ctx := context.Background()

	t.Run("commits everything itself", func(t *testing.T) {
		w := openTask(t, m, repo.base, "self")
		writeFile(t, w.Dir(), "a/one.txt", "uno\n")
		gitT(t, w.Dir(), "commit", "-q", "-am", "the agent's own message")
		mine := gitT(t, w.Dir(), "rev-parse", "HEAD")
		ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "self", Attempt: 1, EventID: "E1"}, "summary")
		require.NoError(t, err)
		assert.NotEqual(t, mine, ch.Head)
		assert.Equal(t, mine, gitT(t, m.mirror, "rev-parse", ch.Head+"^"), "the agent's commit is the parent")
		assert.Equal(t, "the agent's own message", gitT(t, m.mirror, "log", "-1", "--format=%B", mine), "kept as it is")
		assert.Equal(t, treeOf(t, m, mine), treeOf(t, m, ch.Head))
		assert.Equal(t, "Drover-Workflow: wf\nDrover-Task: self\nDrover-Attempt: 1\nDrover-Event: E1",
			gitT(t, m.mirror, "log", "-1", "--format=%(trailers:only,unfold)", ch.Head))
		assert.Equal(t, 2, ch.Commits)
		assert.False(t, ch.Empty)
		head, err := w.Head(ctx)
		require.NoError(t, err)
		assert.Equal(t, ch.Head, head)
		assert.Equal(t, ch.Head, gitT(t, w.Dir(), "rev-parse", "HEAD"))
	})

	for _, line := range []string{"Drover-Merge-Head: " + repo.base, "  drover-task: forged", "DROVER-EVENT:x"} {
		t.Run(line, func(t *testing.T) {
			task := "forge" + strings.Fields(line)[0]
			task = strings.Trim(strings.ReplaceAll(task, ":", ""), " ")
			w := openTask(t, m, repo.base, task)
			writeFile(t, w.Dir(), "x.txt", "x\n")
			gitT(t, w.Dir(), "add", "x.txt")
			gitT(t, w.Dir(), "commit", "-q", "-m", "looks merged\n\n"+line)
			_, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: task, Attempt: 1}, "")
			require.ErrorIs(t, err, ErrWorkspaceBroken)
			assert.Contains(t, err.Error(), "Drover- trailers are Drover's alone")
			head, err := w.Head(ctx)
			require.NoError(t, err)
			assert.Equal(t, repo.base, head, "the branch did not move")
		})
	}
}

// TestHomeEmptiedAtOpen: what one task's agent left in its private HOME is
// gone when the next task opens the same worktree slot.
func TestHomeEmptiedAtOpen(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, func(c *Config) { c.MaxWorktrees = 1 })
	ctx := context.Background()
	a := openTask(t, m, repo.base, "A")
	home := m.homeDir(a.Dir())
	writeFile(t, home, ".ssh/id_stolen", "secret\n")
	require.NoError(t, a.Release(ctx, false))
	b := openTask(t, m, repo.base, "B")
	require.Equal(t, a.Dir(), b.Dir(), "the slot is reused")
	entries, err := os.ReadDir(home)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// TestCopyIgnoredNeverWritesThroughALink: a tracked symbolic link to a
// directory outside the worktree, where copy_ignored would copy into, fails
// Open's setup and nothing is written outside.
func TestCopyIgnoredNeverWritesThroughALink(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	outside := t.TempDir()
	src := filepath.Join(t.TempDir(), "src")
	gitT(t, filepath.Dir(src), "clone", "-q", repo.remote, src)
	require.NoError(t, os.Symlink(outside, filepath.Join(src, "conf")))
	gitT(t, src, "add", "conf")
	gitT(t, src, "commit", "-q", "-m", "a link out")
	gitT(t, src, "push", "-q", "origin", "HEAD:main")
	base := gitT(t, src, "rev-parse", "HEAD")

	from := t.TempDir()
	writeFile(t, from, "conf/app.env", "KEY=1\n")
	writeFile(t, from, "conf/deep/x.env", "X=1\n")
	m := newManager(t, repo.remote, func(c *Config) { c.CopyIgnored = []string{"conf"}; c.CopyFrom = from })
	_, err := m.Open(context.Background(), Spec{Workflow: "wf", Task: "T1", Branch: "drover/wf/T1", Base: base})
	require.ErrorIs(t, err, ErrSetupFailed)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "copy_ignored wrote through the link")

	w := openTask(t, m, repo.base, "T2") // another task is untouched
	_, err = os.Stat(filepath.Join(w.Dir(), "conf", "app.env"))
	require.NoError(t, err)
}

// TestForgedIndexPathRefused: an index the agent wrote by hand with a path
// git never writes (under .git) is refused before it becomes a commit.
func TestForgedIndexPathRefused(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	w := openTask(t, m, repo.base, "T1")
	blob := gitT(t, m.mirror, "rev-parse", repo.base+":README.md")
	writeFile(t, w.Dir(), "a/.git/hooks/pre-commit", gitT(t, m.mirror, "cat-file", "blob", blob)+"\n")
	forgeIndex(t, filepath.Join(m.git.adminDir(w.Dir()), "index"), blob, "README.md", "a/.git/hooks/pre-commit")
	_, err := w.Commit(context.Background(), Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "")
	require.ErrorIs(t, err, ErrWorkspaceBroken)
	assert.Contains(t, err.Error(), "git never writes")
	head, err := w.Head(context.Background())
	require.NoError(t, err)
	assert.Equal(t, repo.base, head)
}

// forgeIndex writes a version 2 index holding blob at each path (sorted),
// as git would but without its path checks.
func forgeIndex(t *testing.T, file, blob string, paths ...string) {
	t.Helper()
	id, err := hex.DecodeString(blob)
	require.NoError(t, err)
	var b bytes.Buffer
	b.WriteString("DIRC")
	_ = binary.Write(&b, binary.BigEndian, []uint32{2, uint32(len(paths))})
	for _, p := range paths {
		start := b.Len()
		_ = binary.Write(&b, binary.BigEndian, []uint32{0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 0})
		b.Write(id)
		_ = binary.Write(&b, binary.BigEndian, uint16(len(p)))
		b.WriteString(p)
		for pad := 8 - (b.Len()-start)%8; pad > 0; pad-- {
			b.WriteByte(0)
		}
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	require.NoError(t, os.WriteFile(file, b.Bytes(), 0o644))
}

// TestBranchWithAgentCommitsTakenOver: a task's pushed branch whose agent
// committed itself (its commits beneath Drover's) is the task's own to take
// over on a new base; one whose tip is an agent's commit is not.
func TestBranchWithAgentCommitsTakenOver(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	m := newManager(t, repo.remote, nil)
	w := openTask(t, m, repo.base, "T1")
	writeFile(t, w.Dir(), "mine.txt", "mine\n")
	gitT(t, w.Dir(), "add", "mine.txt")
	gitT(t, w.Dir(), "commit", "-q", "-m", "the agent's own")
	agentCommit := gitT(t, w.Dir(), "rev-parse", "HEAD")
	ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "")
	require.NoError(t, err)
	require.NoError(t, m.Push(ctx, w.Branch(), ch.Head))
	require.NoError(t, w.Release(ctx, false))
	other := pushTask(t, m, repo.base, "T3", map[string]string{"t3.txt": "merged\n"})
	require.NoError(t, m.PushTarget(ctx, "main", repo.base, other))

	m2 := newManager(t, repo.remote, nil)
	w2, err := m2.Open(ctx, Spec{Workflow: "wf", Task: "T1", Branch: "drover/wf/T1", Base: other})
	require.NoError(t, err)
	require.NoError(t, w2.Release(ctx, false))

	// The agent's commit alone as the tip of a branch: not Drover's.
	src := filepath.Join(t.TempDir(), "src")
	gitT(t, filepath.Dir(src), "clone", "-q", repo.remote, src)
	gitT(t, src, "push", "-q", "origin", agentCommit+":refs/heads/drover/wf/T9")
	m3 := newManager(t, repo.remote, nil)
	_, err = m3.Open(ctx, Spec{Workflow: "wf", Task: "T9", Branch: "drover/wf/T9", Base: other})
	require.ErrorIs(t, err, ErrBranchExists)
}

// TestScratchResetMovesNoRef: a merge check that points the scratch
// worktree's HEAD at a task's branch cannot make the next Reset move that
// branch.
func TestScratchResetMovesNoRef(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	m := newManager(t, repo.remote, nil)
	a := pushTask(t, m, repo.base, "A", map[string]string{"a.txt": "a\n"})
	s, err := m.Scratch(ctx, a)
	require.NoError(t, err)
	defer s.Close(ctx)
	// What a hostile check writes in the admin directory it can write.
	require.NoError(t, os.WriteFile(filepath.Join(m.git.adminDir(s.Dir()), "HEAD"), []byte("ref: refs/heads/drover/wf/A\n"), 0o644))
	require.NoError(t, s.Reset(ctx, repo.base))
	assert.Equal(t, a, gitT(t, m.mirror, "rev-parse", "refs/heads/drover/wf/A"), "the task's branch did not move")
	head, err := s.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, repo.base, head)
}

// TestAgentHistoryChecked: a gitlink one of the agent's commits adds and a
// later one takes away still fails the attempt: every commit is pushed.
func TestAgentHistoryChecked(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	w := openTask(t, m, repo.base, "T1")
	sub := filepath.Join(w.Dir(), "sub")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	gitT(t, sub, "init", "-q")
	writeFile(t, sub, "f.txt", "f\n")
	gitT(t, sub, "add", "-A")
	gitT(t, sub, "commit", "-q", "-m", "nested")
	gitT(t, w.Dir(), "add", "sub")
	gitT(t, w.Dir(), "commit", "-q", "-m", "add a gitlink")
	gitT(t, w.Dir(), "rm", "-q", "--cached", "sub")
	gitT(t, w.Dir(), "commit", "-q", "-m", "take it away")
	require.NoError(t, os.RemoveAll(sub))
	_, err := w.Commit(context.Background(), Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "")
	require.ErrorIs(t, err, ErrWorkspaceBroken)
	assert.Contains(t, err.Error(), "nested git repository")
}

// TestOverridesBeatTheMirrorsConfig: with no sandbox an agent can write the
// mirror's own config; the command-line overrides still keep fsmonitor,
// hooks and the pager from running.
func TestOverridesBeatTheMirrorsConfig(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	marker := filepath.Join(t.TempDir(), "marker")
	script := evilScript(t, marker)
	hooks := t.TempDir()
	for _, h := range []string{"post-index-change", "reference-transaction", "post-checkout", "pre-push", "post-commit"} {
		require.NoError(t, os.Symlink(script, filepath.Join(hooks, h)))
	}
	w := openTask(t, m, repo.base, "T1")
	for _, kv := range [][2]string{{"core.fsmonitor", script}, {"core.hooksPath", hooks}, {"core.pager", script}, {"core.alternateRefsCommand", script}} {
		gitT(t, m.mirror, "config", kv[0], kv[1])
	}
	writeFile(t, w.Dir(), "x.txt", "x\n")
	ch, err := w.Commit(context.Background(), Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "")
	require.NoError(t, err)
	require.NoError(t, m.Push(context.Background(), w.Branch(), ch.Head))
	require.NoError(t, w.Release(context.Background(), false))
	w2 := openTask(t, m, repo.base, "T2") // reuses the worktree: checkout, clean
	require.NotNil(t, w2)
	_, err = os.Stat(marker)
	require.ErrorIs(t, err, os.ErrNotExist, "a program the mirror's config named was run")
}
