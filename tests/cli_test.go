package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/cli"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// cliBuffer is a bytes.Buffer safe for concurrent writes: the command line
// points the default logger at its stderr.
type cliBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *cliBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *cliBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// drover runs the command line in-process against the bundle's server and
// returns its exit code, stdout and stderr.
func (b *bundle) drover(args ...string) (int, string, string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr cliBuffer
	args = append([]string{"--nats-url", b.srv.ClientURL(), "--log-format", "text", "--log-level", "warn"}, args...)
	code := cli.Execute(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// cacheStats runs `drover cache stats --json`.
func (b *bundle) cacheStats() cache.Stats {
	b.t.Helper()
	code, out, errOut := b.drover("cache", "stats", "--json")
	require.Equal(b.t, 0, code, errOut)
	var st cache.Stats
	require.NoError(b.t, json.Unmarshal([]byte(out), &st), out)
	return st
}

func roleEntries(st cache.Stats) map[subjects.Role]uint64 {
	out := map[subjects.Role]uint64{}
	for _, r := range st.Roles {
		out[r.Role] = r.Entries
	}
	return out
}

func TestCLIInspectsWorkflowsTasksAndCache(t *testing.T) {
	t.Parallel()
	b := setup(t)
	simWorker(b, runner.NewSim(runner.SimOptions{}), 4)
	const wf = "wf.cli"
	ids := []string{"T1", "T2.a", "T3/x"}
	var reqs []subjects.TaskRequest
	for _, id := range ids {
		reqs = append(reqs, task(wf, id))
	}
	reqs[0] = withSim(reqs[0], `{"judge_rejects": 1}`)
	after := b.submit(reqs...)
	b.waitTerminal(wf, after, len(ids))
	stored := b.events(wf)

	// audit --json prints every event, in order, as stored.
	code, out, errOut := b.drover("audit", "--workflow", wf, "--json")
	require.Equal(t, 0, code, errOut)
	var got []subjects.AuditEvent
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var ev subjects.AuditEvent
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), sc.Text())
		got = append(got, ev)
	}
	require.Len(t, got, len(stored))
	for i := range stored {
		require.Equal(t, stored[i].EventID, got[i].EventID)
	}

	// The default table has a row per event.
	code, out, errOut = b.drover("audit", "--workflow", wf, "--type", "task_completed")
	require.Equal(t, 0, code, errOut)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 1+len(ids), out)

	// --summary: one row per task, and the speedup.
	code, out, errOut = b.drover("audit", "--workflow", wf, "--summary")
	require.Equal(t, 0, code, errOut)
	for _, id := range ids {
		require.Contains(t, out, id)
	}
	require.Contains(t, out, "speedup")
	require.Contains(t, out, "3 tasks, 3 completed")

	// task get: positional W/T split at the first "/", and the flag form.
	code, out, errOut = b.drover("task", "get", wf+"/T3/x")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^state\s+completed$`, out)
	require.Contains(t, out, "result:")
	require.NotContains(t, out, "outbox")
	code, out, errOut = b.drover("task", "get", "--workflow", wf, "--id", "T1", "--json")
	require.Equal(t, 0, code, errOut)
	var st subjects.TaskState
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, subjects.StateCompleted, st.State)
	require.Equal(t, 2, st.Attempt)
	code, _, errOut = b.drover("task", "get", wf+"/never")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "task wf.cli/never has not been picked up yet (no state)")

	// cache: entries of all three roles; invalidating one role empties it.
	entries := roleEntries(b.cacheStats())
	require.EqualValues(t, len(ids), entries[subjects.RolePlanner])
	require.EqualValues(t, len(ids)+1, entries[subjects.RoleImplementer])
	require.EqualValues(t, len(ids)+1, entries[subjects.RoleJudge])
	code, out, errOut = b.drover("cache", "invalidate", "--role", "planner")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "removed 3 planner entries")
	entries = roleEntries(b.cacheStats())
	require.Zero(t, entries[subjects.RolePlanner])
	require.EqualValues(t, len(ids)+1, entries[subjects.RoleJudge])

	// invalidate --task covers every round of the task.
	code, out, errOut = b.drover("cache", "invalidate", "--task", wf+"/T1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "removed 4 entries")
	require.Contains(t, out, "used 5 cache keys")
	entries = roleEntries(b.cacheStats())
	require.EqualValues(t, len(ids)-1, entries[subjects.RoleImplementer])

	code, _, errOut = b.drover("cache", "clear")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--yes")
	code, out, errOut = b.drover("cache", "clear", "--yes")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "removed 4 entries")
	require.Zero(t, b.cacheStats().Entries)
}

func TestCLIRejectsBadFlags(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "--actor", "reviewer"}, `--actor "reviewer"`},
		{[]string{"audit", "--type", "task_done"}, `--type "task_done"`},
		{[]string{"audit", "--since", "yesterday"}, `--since "yesterday"`},
		{[]string{"audit", "--since", "1h", "--until", "2h"}, "--until"},
		{[]string{"audit", "--summary"}, "--summary needs --workflow"},
		{[]string{"audit", "--workflow", "has space"}, `--workflow "has space"`},
		{[]string{"task", "get", "no-slash"}, "WORKFLOW/TASK"},
		{[]string{"task", "get", "w/t", "--workflow", "w"}, "not both"},
		{[]string{"cache", "invalidate"}, "exactly one of --role or --task"},
		{[]string{"cache", "invalidate", "--role", "reviewer"}, `--role "reviewer"`},
	} {
		code, _, errOut := b.drover(c.args...)
		require.Equal(t, 1, code, c.args)
		require.Contains(t, errOut, c.want, c.args)
	}
}

// watchWriter collects output and signals each new occurrence of want.
type watchWriter struct {
	cliBuffer
	want string
	seen int
	hits chan struct{}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	n, err := w.cliBuffer.Write(p)
	for total := strings.Count(w.String(), w.want); w.seen < total; w.seen++ {
		w.hits <- struct{}{}
	}
	return n, err
}

// await waits for the next occurrence of the watched text.
func (w *watchWriter) await(t *testing.T) {
	t.Helper()
	select {
	case <-w.hits:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %q in the output:\n%s", w.want, w.String())
	}
}

func TestCLIAuditFollowPrintsOldAndNewEventsAndStopsCleanly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	simWorker(b, runner.NewSim(runner.SimOptions{}), 4)
	const wf = "wf-follow"
	b.waitTerminal(wf, b.submit(task(wf, "old")), 1)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &watchWriter{want: "task_completed", hits: make(chan struct{}, 16)}
	var stderr cliBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(ctx, []string{"--nats-url", b.srv.ClientURL(), "audit", "--workflow", wf, "--follow"}, out, &stderr)
	}()
	out.await(t) // the old task's events, printed as they stood
	b.submit(task(wf, "new"))
	out.await(t) // the new task's, printed as they arrive
	cancel()     // Ctrl-C
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("audit --follow did not stop when its context ended")
	}
	text := out.String()
	require.Contains(t, text, "old")
	require.Contains(t, text, "new")
	require.Equal(t, 11, strings.Count(text, "\n"), "a header and five events per task:\n%s", text)
}
