//go:build linux

package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/sandbox/sandboxtest"
	"github.com/droverhq/drover/subjects"
)

// runAgent runs script as the implementer of w's task, contained by the
// exec runner in the bubblewrap sandbox, and returns what it printed.
func runAgent(t *testing.T, w *Workspace, script string) string {
	t.Helper()
	sb, err := sandbox.New(sandbox.Config{})
	require.NoError(t, err)
	e, err := runner.NewExec(subjects.RoleImplementer, runner.ExecConfig{Argv: []string{"sh", "-c", script}, Sandbox: sb}, nil)
	require.NoError(t, err)
	req := runner.Request{Role: subjects.RoleImplementer, Task: subjects.TaskRequest{ID: "T", Workflow: "wf", Scope: "s", Verification: "v"}, Attempt: 1,
		Workspace: &runner.Workspace{Dir: w.Dir(), Branch: w.Branch(), Base: w.Base(), Sandbox: w.SandboxPaths()}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := e.Run(ctx, req)
	require.NoError(t, err)
	var out struct{ Change string }
	require.NoError(t, json.Unmarshal(res.Output, &out))
	return out.Change
}

// fsckMirror checks every object of the mirror and that every ref's
// history is complete. (The worktrees' HEADs are left out: a task's agent
// may have moved its own to a commit in its private store.)
func fsckMirror(t *testing.T, m *Manager) {
	t.Helper()
	refs := strings.Fields(gitT(t, m.mirror, "for-each-ref", "--format=%(objectname)"))
	require.NotEmpty(t, refs)
	gitT(t, m.mirror, append([]string{"fsck", "--strict", "--no-dangling", "--no-reflogs"}, refs...)...)
}

// agentCommit is a script that commits a new file and stages another.
const agentCommit = `
	echo "agent's file" > agent.txt
	git add agent.txt && git -c user.name=Agent -c user.email=agent@localhost commit -qm "agent's commit" && echo committed
	echo staged > staged.txt && git add staged.txt && echo staged`

// A hostile agent cannot delete or overwrite the mirror's objects and
// packs: the store is read-only in the sandbox, so the mirror and every
// other task's worktree stay whole (git fsck clean), and the agent's own
// commit still works.
func TestSandboxObjectStoreReadOnly(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	ctx := context.Background()
	w1 := openTask(t, m, repo.base, "T1")
	w2 := openTask(t, m, repo.base, "T2")
	// Another task's recorded change (loose objects), then everything in
	// one pack beside them.
	writeFile(t, w2.Dir(), "other.txt", "the other task's work\n")
	ch2, err := w2.Commit(ctx, Trailers{Workflow: "wf", Task: "T2", Attempt: 1}, "other")
	require.NoError(t, err)
	gitT(t, m.mirror, "repack", "-aq")
	writeFile(t, w2.Dir(), "other2.txt", "more\n")
	ch2, err = w2.Commit(ctx, Trailers{Workflow: "wf", Task: "T2", Attempt: 2}, "other")
	require.NoError(t, err)
	objects := filepath.Join(m.mirror, "objects")
	before := snapshot(t, []string{objects}, nil)

	out := runAgent(t, w1, fmt.Sprintf(`
		o=%[1]s
		for f in $o/pack/*.pack $o/pack/*.idx $o/??/*; do
			rm -f "$f" && echo removed
			echo garbage > "$f" && echo overwrote
			chmod 0 "$f" && echo chmodded
		done
		rm -rf $o/pack && echo removed-pack
		mkdir $o/ab && echo made-dir
		git -c gc.auto=0 repack -adq; git prune
		echo tried`, objects)+agentCommit)
	require.Contains(t, out, "tried")
	for _, never := range []string{"removed", "overwrote", "chmodded", "made-dir"} {
		require.NotContains(t, out, never)
	}
	require.Contains(t, out, "committed", "git in the worktree still commits")
	require.Empty(t, changed(before, snapshot(t, []string{objects}, nil)), "the mirror's object store changed")

	fsckMirror(t, m)
	require.Equal(t, ch2.Head, gitT(t, w2.Dir(), "rev-parse", "HEAD"))
	require.Empty(t, gitT(t, w2.Dir(), "status", "--porcelain"), "the other task's worktree is intact")
	ch1, err := w1.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "mine")
	require.NoError(t, err)
	require.Equal(t, 2, ch1.Commits)
	fsckMirror(t, m)
}

// The agent's objects are written to its private store, not the mirror's;
// Commit imports those its head needs (the commit and the staged blob), so
// the mirror is complete and the branch pushes to the remote.
func TestAgentObjectsImported(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	ctx := context.Background()
	w := openTask(t, m, repo.base, "T1")
	out := runAgent(t, w, agentCommit+`
		git rev-parse HEAD; echo dir="$GIT_OBJECT_DIRECTORY"`)
	require.Contains(t, out, "committed")
	require.Contains(t, out, "dir="+m.git.objectsDir(w.Dir()))
	head, err := m.git.out(ctx, w.Dir(), "rev-parse", "HEAD")
	require.NoError(t, err)
	_, err = gitTry(m.mirror, "cat-file", "-e", head)
	require.Error(t, err, "the agent's commit is not in the mirror before Commit")
	files, err := m.checkObjects(w.Dir())
	require.NoError(t, err)
	require.Positive(t, files, "the agent's objects are in its private store")

	ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "done")
	require.NoError(t, err)
	require.Equal(t, 2, ch.Commits)
	require.Equal(t, head, gitT(t, m.mirror, "rev-parse", ch.Head+"^"), "the agent's commit is adopted")
	require.Equal(t, "agent's file", gitT(t, m.mirror, "cat-file", "-p", head+":agent.txt"))
	require.Equal(t, "staged", gitT(t, m.mirror, "cat-file", "-p", ch.Head+":staged.txt"))
	gitT(t, m.mirror, "fsck", "--strict", "--no-dangling", ch.Head)

	require.NoError(t, m.Push(ctx, w.Branch(), ch.Head))
	require.Equal(t, ch.Head, gitT(t, repo.remote, "rev-parse", "refs/heads/"+w.Branch()))
	require.Equal(t, "agent's file", gitT(t, repo.remote, "cat-file", "-p", ch.Head+":agent.txt"))
	gitT(t, repo.remote, "fsck", "--strict", "--no-dangling")
}

// An agent that forges its private store fails its own task only, with a
// reason naming it: an object stored under a name that is not the hash of
// its content, the store swapped for a link, an alternates file naming
// another store. The branch stays where it was, the mirror is whole and
// another task records its change.
func TestAgentForgedObjects(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	for _, tc := range []struct {
		name, script, reason string
	}{
		{"an object under another's name", agentCommit + `
			o="$GIT_OBJECT_DIRECTORY"
			good=$(git rev-parse HEAD:agent.txt); evil=$(echo evil | git hash-object -w --stdin)
			dst="$o/$(echo $good | cut -c1-2)/$(echo $good | cut -c3-)"; rm -f "$dst"
			cat "$o/$(echo $evil | cut -c1-2)/$(echo $evil | cut -c3-)" > "$dst" && echo planted`,
			"do not verify"},
		{"a commit under another's name", agentCommit + `
			o="$GIT_OBJECT_DIRECTORY"; head=$(git rev-parse HEAD)
			other=$(git -c user.name=Agent -c user.email=agent@localhost commit-tree -p HEAD~1 -m other HEAD^{tree})
			dst="$o/$(echo $head | cut -c1-2)/$(echo $head | cut -c3-)"; rm -f "$dst"
			cat "$o/$(echo $other | cut -c1-2)/$(echo $other | cut -c3-)" > "$dst" && echo planted`,
			"hash mismatch"},
		{"the store swapped for a link", agentCommit + `
			mv "$GIT_OBJECT_DIRECTORY" "$GIT_OBJECT_DIRECTORY.real" && ln -s "$GIT_OBJECT_DIRECTORY.real" "$GIT_OBJECT_DIRECTORY" && echo planted`,
			"replaced"},
		{"an alternates file", agentCommit + `
			mkdir -p "$GIT_OBJECT_DIRECTORY/info" && echo /tmp > "$GIT_OBJECT_DIRECTORY/info/alternates" && echo planted`,
			"names other stores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := newTestRepo(t)
			m := newManager(t, repo.remote, nil)
			ctx := context.Background()
			w1 := openTask(t, m, repo.base, "T1")
			w2 := openTask(t, m, repo.base, "T2")
			require.Contains(t, runAgent(t, w1, tc.script), "planted")
			writeFile(t, w2.Dir(), "other.txt", "the other task's work\n")

			_, err := w1.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "forged")
			require.ErrorIs(t, err, ErrWorkspaceBroken)
			require.ErrorContains(t, err, tc.reason)
			require.Equal(t, repo.base, gitT(t, m.mirror, "rev-parse", "refs/heads/"+w1.Branch()), "the branch did not move")

			ch2, err := w2.Commit(ctx, Trailers{Workflow: "wf", Task: "T2", Attempt: 1}, "other")
			require.NoError(t, err, "the other task records its change")
			require.Equal(t, 1, ch2.Commits)
			fsckMirror(t, m)
		})
	}
}

// A reused worktree starts with an empty private store: nothing the last
// task's agent wrote there reaches the next one.
func TestReusedWorktreeFreshObjects(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, func(c *Config) { c.MaxWorktrees = 1 })
	ctx := context.Background()
	w1 := openTask(t, m, repo.base, "T1")
	require.Contains(t, runAgent(t, w1, agentCommit), "committed")
	_, err := w1.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "done")
	require.NoError(t, err)
	objects := m.git.objectsDir(w1.Dir())
	ents, err := os.ReadDir(objects)
	require.NoError(t, err)
	require.NotEmpty(t, ents)
	require.NoError(t, w1.Release(ctx, false))

	w2 := openTask(t, m, repo.base, "T2")
	require.Equal(t, w1.Dir(), w2.Dir(), "the worktree is reused")
	ents, err = os.ReadDir(objects)
	require.NoError(t, err)
	require.Empty(t, ents, "the reused worktree's private store is empty")
	require.Contains(t, runAgent(t, w2, `git status --porcelain | wc -l; echo status=$?`), "status=0")
	require.NoFileExists(t, filepath.Join(w2.Dir(), "agent.txt"))
}

// What a merge check writes to the scratch's private store is gone when
// it ends: Drover's next merges in the scratch never read it.
func TestScratchCheckObjectsDropped(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	repo := newTestRepo(t)
	sb, err := sandbox.New(sandbox.Config{})
	require.NoError(t, err)
	m := newManagerWith(t, repo.remote, Deps{Sandbox: sb}, nil)
	ctx := context.Background()
	s, err := m.Scratch(ctx, repo.base)
	require.NoError(t, err)
	defer s.Close(ctx)
	objects := m.git.objectsDir(s.Dir())
	check := Command{Argv: []string{"sh", "-c", `echo planted | git hash-object -w --stdin && test -n "$(ls "$GIT_OBJECT_DIRECTORY")"`}}
	require.NoError(t, s.Run(ctx, check))
	ents, err := os.ReadDir(objects)
	require.NoError(t, err)
	require.Empty(t, ents, "the check's objects are dropped")
	require.NoError(t, s.Reset(ctx, repo.base))
}
