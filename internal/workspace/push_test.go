package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
)

// hook installs an executable hook in the bare remote.
func hook(t *testing.T, remote, name, script string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(remote, "hooks", name), []byte("#!/bin/sh\n"+script), 0o755))
}

// countingRemote makes the remote count receive-pack runs (one line per
// push in pushes.log) beside its reflog.
func countingRemote(t *testing.T, remote string) func() int {
	t.Helper()
	log := filepath.Join(t.TempDir(), "pushes.log")
	hook(t, remote, "post-receive", fmt.Sprintf("echo push >> '%s'\n", log))
	return func() int {
		b, err := os.ReadFile(log)
		if err != nil {
			return 0
		}
		return strings.Count(string(b), "push\n")
	}
}

// commitTasks opens, edits (its own file and a shared one) and commits n
// tasks, releasing each; it returns branch -> head.
func commitTasks(t *testing.T, m *Manager, base string, n int) map[string]string {
	t.Helper()
	ctx := context.Background()
	heads := map[string]string{}
	for i := range n {
		task := fmt.Sprintf("T%d", i)
		w := openTask(t, m, base, task)
		writeFile(t, w.Dir(), task+".txt", task+"\n")
		writeFile(t, w.Dir(), "shared.txt", "edited by "+task+"\n")
		ch, err := w.Commit(ctx, Trailers{Workflow: "wf", Task: task, Attempt: 1}, "")
		require.NoError(t, err)
		require.Len(t, ch.Files, 2)
		heads[w.Branch()] = ch.Head
		require.NoError(t, w.Release(ctx, false))
	}
	return heads
}

// pushAll pushes every branch concurrently and returns the errors by branch.
func pushAll(ctx context.Context, m *Manager, heads map[string]string) map[string]error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := map[string]error{}
	for b, h := range heads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := m.Push(ctx, b, h)
			mu.Lock()
			errs[b] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errs
}

// TestPushBatched: 16 branches pushed at once go out in at most
// ceil(16/batch) git pushes (counted by the remote), each branch holding its
// own commit, once in the remote's reflog.
func TestPushBatched(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	pushes := countingRemote(t, repo.remote)
	const batch = 5
	m := newManager(t, repo.remote, func(c *Config) { c.Push, c.PushBatch, c.PushDelay = true, batch, time.Second })
	heads := commitTasks(t, m, repo.base, 16)

	for b, err := range pushAll(context.Background(), m, heads) {
		require.NoError(t, err, b)
	}
	assert.LessOrEqual(t, pushes(), (16+batch-1)/batch)
	assert.LessOrEqual(t, m.Stats().Pushes, int64((16+batch-1)/batch))
	assert.Equal(t, int64(16), m.Stats().PushedRefs)
	for b, h := range heads {
		assert.Equal(t, h, gitT(t, repo.remote, "rev-parse", "refs/heads/"+b))
		assert.Len(t, strings.Split(gitT(t, repo.remote, "reflog", "show", "--format=%H", "refs/heads/"+b), "\n"), 1, b)
		// exactly its own change from the base
		files := gitT(t, repo.remote, "diff", "--name-only", repo.base, h)
		task := strings.TrimPrefix(b, "drover/wf/")
		assert.Equal(t, task+".txt\nshared.txt", files)
	}
	// Pushing again is a no-op success.
	for b, h := range heads {
		require.NoError(t, m.Push(context.Background(), b, h))
		break
	}
}

// TestPushRejectedOneRef: the remote's update hook refuses one branch; only
// that push fails, with the remote's message, and the others land.
func TestPushRejectedOneRef(t *testing.T) {
	t.Parallel()
	for _, hookName := range []string{"update", "pre-receive"} {
		t.Run(hookName, func(t *testing.T) {
			t.Parallel()
			repo := newTestRepo(t)
			script := `case "$1" in *T3) echo "T3 is not welcome" >&2; exit 1;; esac` + "\n"
			if hookName == "pre-receive" {
				script = `while read old new ref; do case "$ref" in *T3) echo "T3 is not welcome" >&2; exit 1;; esac; done` + "\n"
			}
			hook(t, repo.remote, hookName, script)
			m := newManager(t, repo.remote, func(c *Config) { c.Push, c.PushBatch, c.PushDelay = true, 8, time.Second })
			heads := commitTasks(t, m, repo.base, 6)
			errs := pushAll(context.Background(), m, heads)
			for b, err := range errs {
				if strings.HasSuffix(b, "T3") {
					require.ErrorIs(t, err, ErrPushRejected, b)
					assert.Contains(t, err.Error(), "hook declined")
					_, err := gitTry(repo.remote, "rev-parse", "--verify", "refs/heads/"+b)
					assert.Error(t, err, "the refused branch is not on the remote")
					continue
				}
				require.NoError(t, err, b)
				assert.Equal(t, heads[b], gitT(t, repo.remote, "rev-parse", "refs/heads/"+b))
			}
		})
	}
}

// TestPushRemoteDown: while the remote is away pushes are retried with
// backoff; once it is back everything is pushed, nothing lost.
func TestPushRemoteDown(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, func(c *Config) { c.Push, c.PushBatch = true, 4 })
	heads := commitTasks(t, m, repo.base, 6)
	away := repo.remote + ".away"
	require.NoError(t, os.Rename(repo.remote, away))

	done := make(chan map[string]error, 1)
	go func() { done <- pushAll(context.Background(), m, heads) }()
	assert.Eventually(t, func() bool { return m.Stats().PushRetries >= 2 }, 30*time.Second, 5*time.Millisecond)
	select {
	case <-done:
		t.Fatal("pushes returned while the remote was down")
	default:
	}
	require.NoError(t, os.Rename(away, repo.remote))
	errs := natstest.Recv(t, done, 60*time.Second)
	for b, err := range errs {
		require.NoError(t, err, b)
		assert.Equal(t, heads[b], gitT(t, repo.remote, "rev-parse", "refs/heads/"+b))
	}
	assert.Len(t, errs, 6)
}

// TestPushContextAndClose: a push whose context ends returns its error; a
// push after Close is ErrClosed.
func TestPushContextAndClose(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, func(c *Config) { c.Push = true })
	heads := commitTasks(t, m, repo.base, 1)
	require.NoError(t, os.Rename(repo.remote, repo.remote+".away"))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	for b, h := range heads {
		go func() { errc <- m.Push(ctx, b, h) }()
	}
	assert.Eventually(t, func() bool { return m.Stats().PushRetries >= 1 }, 30*time.Second, 5*time.Millisecond)
	cancel()
	require.ErrorIs(t, natstest.Recv(t, errc, 30*time.Second), context.Canceled)
	require.NoError(t, m.Close())
	require.ErrorIs(t, m.Push(context.Background(), "drover/wf/T0", repo.base), ErrClosed)
}

// TestCloseFlushesQueuedPushes: a push waiting for its batch to fill is
// pushed when the Manager closes.
func TestCloseFlushesQueuedPushes(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, func(c *Config) { c.Push, c.PushDelay = true, time.Hour })
	heads := commitTasks(t, m, repo.base, 1)
	var reqs []*pushReq
	for b, h := range heads {
		r := &pushReq{ctx: context.Background(), branch: b, head: h, done: make(chan error, 1)}
		require.NoError(t, m.pusher.enqueue(r)) // returns once the pusher holds it
		reqs = append(reqs, r)
	}
	require.NoError(t, m.Close())
	for _, r := range reqs {
		require.NoError(t, natstest.Recv(t, r.done, 30*time.Second))
		assert.Equal(t, r.head, gitT(t, repo.remote, "rev-parse", "refs/heads/"+r.branch))
	}
}
