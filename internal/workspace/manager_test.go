package workspace

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
)

// TestResolveBaseCoalesced: 16 concurrent ResolveBase calls share one fetch.
// The fetch is held until the 15 others have joined it.
func TestResolveBaseCoalesced(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	before := m.Stats().Fetches
	release := make(chan struct{})
	m.fetchHook = func() { <-release }

	var wg sync.WaitGroup
	shas := make([]string, 16)
	errs := make([]error, 16)
	for i := range shas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shas[i], errs[i] = m.ResolveBase(context.Background())
		}()
	}
	assert.Eventually(t, func() bool {
		m.fetchMu.Lock()
		defer m.fetchMu.Unlock()
		return m.flight != nil && m.flight.waiters.Load() == 15
	}, 10*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	for i := range shas {
		require.NoError(t, errs[i])
		assert.Equal(t, repo.base, shas[i])
	}
	assert.Equal(t, before+1, m.Stats().Fetches)
}

// TestResolveBaseRefs: the default branch, a branch, a tag, a commit, and
// a ref that does not exist.
func TestResolveBaseRefs(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	src := filepath.Join(t.TempDir(), "src")
	gitT(t, filepath.Dir(src), "clone", "-q", repo.remote, src)
	writeFile(t, src, "dev.txt", "dev\n")
	gitT(t, src, "checkout", "-q", "-b", "dev")
	gitT(t, src, "add", "-A")
	gitT(t, src, "commit", "-q", "-m", "dev")
	gitT(t, src, "tag", "v1")
	gitT(t, src, "push", "-q", "origin", "dev", "v1")
	dev := gitT(t, src, "rev-parse", "HEAD")

	for _, tc := range []struct{ ref, want string }{
		{"", repo.base}, {"main", repo.base}, {"refs/heads/dev", dev}, {"dev", dev}, {"v1", dev}, {dev, dev},
	} {
		m := newManager(t, repo.remote, func(c *Config) { c.BaseRef = tc.ref })
		got, err := m.ResolveBase(context.Background())
		require.NoError(t, err, "ref %q", tc.ref)
		assert.Equal(t, tc.want, got, "ref %q", tc.ref)
	}
	m := newManager(t, repo.remote, func(c *Config) { c.BaseRef = "nope" })
	_, err := m.ResolveBase(context.Background())
	require.ErrorContains(t, err, "not found")
}

// TestReleaseReusesAndBounds: a released worktree is reused by the next
// task (clean, on the new branch); MaxWorktrees bounds the open ones; a kept
// one survives a restart while the others are pruned; Stats count them.
func TestReleaseReusesAndBounds(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ws")
	m := newManager(t, repo.remote, func(c *Config) { c.Dir = dir; c.MaxWorktrees = 2 })

	a := openTask(t, m, repo.base, "A")
	writeFile(t, a.Dir(), "junk/untracked.txt", "junk\n")
	writeFile(t, a.Dir(), "a/one.txt", "dirty\n")
	require.NoError(t, a.Release(ctx, false))
	b := openTask(t, m, repo.base, "B")
	assert.Equal(t, a.Dir(), b.Dir(), "the released worktree is reused")
	assert.Empty(t, gitT(t, b.Dir(), "status", "--porcelain", "--ignored"))
	assert.Equal(t, repo.base, gitT(t, b.Dir(), "rev-parse", "HEAD"), "HEAD detached at the base")
	assert.Equal(t, repo.base, gitT(t, m.mirror, "rev-parse", "refs/heads/drover/wf/B"))
	c := openTask(t, m, repo.base, "C")

	// A third open waits for a slot.
	opened := make(chan *Workspace, 1)
	go func() {
		w, err := m.Open(ctx, Spec{Workflow: "wf", Task: "D", Branch: "drover/wf/D", Base: repo.base})
		if err == nil {
			opened <- w
		}
		close(opened)
	}()
	assert.Equal(t, 2, m.Stats().Open)
	require.NoError(t, c.Release(ctx, true)) // kept: frees its slot
	d := natstest.Recv(t, opened, 30*time.Second)
	require.NotNil(t, d)
	s := m.Stats()
	assert.Equal(t, 1, s.Kept)
	assert.Equal(t, 2, s.Open)
	assert.Positive(t, s.DiskBytes)

	// Two tasks never share a branch.
	_, err := m.Open(ctx, Spec{Workflow: "wf", Task: "B", Branch: b.Branch(), Base: repo.base})
	require.ErrorIs(t, err, ErrBranchBusy)

	// A restart prunes what is not kept.
	require.NoError(t, m.Close())
	stale := b.Dir()
	m2 := newManager(t, repo.remote, func(c *Config) { c.Dir = dir })
	assert.NoDirExists(t, stale)
	assert.DirExists(t, c.Dir())
	assert.Equal(t, 1, m2.Stats().Kept)
	assert.Equal(t, 0, m2.Stats().Worktrees)
	// The kept worktree's branch can be opened again (it is detached there).
	w := openTask(t, m2, repo.base, "C")
	assert.NotEqual(t, c.Dir(), w.Dir())
	gitT(t, m2.mirror, "fsck", "--no-progress")
	_ = d.Release(ctx, false)
	_ = b.Release(ctx, false)
	entries, err := os.ReadDir(filepath.Join(dir, "wt"))
	require.NoError(t, err)
	assert.NotEmpty(t, entries)
}

// TestBranchExists: a branch with other history is refused; one Drover made
// for the same task on the same base is taken over.
func TestBranchExists(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	gitT(t, filepath.Dir(src), "clone", "-q", repo.remote, src)
	writeFile(t, src, "human.txt", "a human's work\n")
	gitT(t, src, "add", "-A")
	gitT(t, src, "commit", "-q", "-m", "human")
	gitT(t, src, "push", "-q", "origin", "HEAD:refs/heads/drover/wf/T1")

	m := newManager(t, repo.remote, nil)
	_, err := m.Open(ctx, Spec{Workflow: "wf", Task: "T1", Branch: "drover/wf/T1", Base: repo.base})
	require.ErrorIs(t, err, ErrBranchExists)
	assert.Equal(t, 0, m.Stats().Open)

	// Drover's own branch for the same task (a restart, a resume): taken.
	w := openTask(t, m, repo.base, "T2")
	writeFile(t, w.Dir(), "x.txt", "x\n")
	ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: "T2", Attempt: 1}, "")
	require.NoError(t, err)
	require.NoError(t, m.Push(ctx, w.Branch(), ch.Head))
	require.NoError(t, w.Release(ctx, false))
	other := newManager(t, repo.remote, nil)
	w2, err := other.Open(ctx, Spec{Workflow: "wf", Task: "T2", Branch: "drover/wf/T2", Base: repo.base})
	require.NoError(t, err)
	require.NoError(t, w2.Release(ctx, false))
	// ... but not for another task.
	_, err = other.Open(ctx, Spec{Workflow: "wf", Task: "T3", Branch: "drover/wf/T2", Base: repo.base})
	require.ErrorIs(t, err, ErrBranchExists)
}

// TestSetupAndCopyIgnored: ignored files are copied from the source tree,
// setup commands run in the worktree with the DROVER_ variables, and a
// failing setup fails Open with ErrSetupFailed and frees the slot.
func TestSetupAndCopyIgnored(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	ctx := context.Background()
	src := t.TempDir()
	writeFile(t, src, ".env", "SECRET=1\n")
	writeFile(t, src, "conf/local.yaml", "x: 1\n")
	writeFile(t, src, "other.txt", "not copied\n")
	m := newManager(t, repo.remote, func(c *Config) {
		c.CopyIgnored = []string{".env", "conf"}
		c.CopyFrom = src
		c.Setup = []Command{{Argv: []string{"sh", "-c", `printf '%s %s' "$DROVER_BRANCH" "$DROVER_BASE_SHA" > setup.out`}}}
		c.MaxWorktrees = 1
	})
	w := openTask(t, m, repo.base, "T1")
	assert.FileExists(t, filepath.Join(w.Dir(), ".env"))
	assert.FileExists(t, filepath.Join(w.Dir(), "conf/local.yaml"))
	assert.NoFileExists(t, filepath.Join(w.Dir(), "other.txt"))
	b, err := os.ReadFile(filepath.Join(w.Dir(), "setup.out"))
	require.NoError(t, err)
	assert.Equal(t, "drover/wf/T1 "+repo.base, string(b))
	require.NoError(t, w.Release(ctx, false))

	bad := newManager(t, repo.remote, func(c *Config) {
		c.Setup = []Command{{Argv: []string{"sh", "-c", "echo no deps >&2; exit 3"}}}
		c.MaxWorktrees = 1
	})
	for range 2 { // the slot is freed each time
		_, err = bad.Open(ctx, Spec{Workflow: "wf", Task: "T1", Branch: "drover/wf/T1", Base: repo.base})
		require.ErrorIs(t, err, ErrSetupFailed)
		assert.Contains(t, err.Error(), "no deps")
	}
}

// TestOpenWaitsForSlotWithinContext: an Open waiting for a slot returns its
// context's error and gives the branch back.
func TestOpenWaitsForSlotWithinContext(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, func(c *Config) { c.MaxWorktrees = 1 })
	a := openTask(t, m, repo.base, "A")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Open(ctx, Spec{Workflow: "wf", Task: "B", Branch: "drover/wf/B", Base: repo.base})
		errc <- err
	}()
	assert.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, waiting := m.open["drover/wf/B"]
		return waiting
	}, 10*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, natstest.Recv(t, errc, 30*time.Second), context.Canceled)
	require.NoError(t, a.Release(context.Background(), false))
	b := openTask(t, m, repo.base, "B")
	assert.Equal(t, a.Dir(), b.Dir())
}
