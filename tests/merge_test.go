package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/subjects"
)

// mergeRig is a workspace rig whose workers deliver by the merge queue of
// main, with the scripted merge agent as the implementer and the sim judge.
type mergeRig struct {
	*wsRig
	check    string   // the merge check's argv, as YAML
	readOnly []string // paths the sandbox shows the check
}

func newMergeRig(t *testing.T, check string) *mergeRig {
	r := newWSRig(t)
	agent, err := filepath.Abs(filepath.Join("testdata", "merge_agent.sh"))
	require.NoError(t, err)
	r.agent = agent
	return &mergeRig{wsRig: r, check: check}
}

// startMergeProc runs a worker process with delivery merge.
func (r *mergeRig) startMergeProc(id string) *proc {
	r.t.Helper()
	doc := r.configYAML(filepath.Join(r.t.TempDir(), "workspaces"), wsOptions{pushDelay: "50ms", readOnly: r.readOnly}) +
		"delivery: merge\nmerge: {target: main, batch: 8, lease_ttl: 2s, check: {argv: " + r.check + ", timeout: 2m}}\n"
	cfg := filepath.Join(r.t.TempDir(), "drover.yaml")
	require.NoError(r.t, os.WriteFile(cfg, []byte(doc), 0o644))
	return r.startProc("--config", cfg, "--worker-id", id, "--ack-wait", "5s", "--concurrency", "4")
}

// mergedTo decodes task_completed's output.delivery.merge.
func mergedTo(t *testing.T, ev subjects.AuditEvent) (commit, head string) {
	t.Helper()
	require.Equal(t, subjects.EventTaskCompleted, ev.EventType, "%s: %s %s", ev.TaskID, ev.Action, ev.Error)
	var o struct {
		Delivery struct {
			Merge struct{ Target, Commit, Head string }
		}
	}
	require.NoError(t, json.Unmarshal(ev.Output, &o), "%s", ev.Output)
	require.Equal(t, "main", o.Delivery.Merge.Target, "%s", ev.Output)
	return o.Delivery.Merge.Commit, o.Delivery.Merge.Head
}

// checkMerged asserts main: sound, each task's file in it, each task's
// reported commit holding its head and in main, each head merged once.
func (r *mergeRig) checkMerged(got map[string]subjects.AuditEvent) string {
	t := r.t
	gitIn(t, r.remote.dir, "fsck", "--no-dangling")
	main := r.remote.rev("refs/heads/main")
	trailers := gitIn(t, r.remote.dir, "log", "--format=%(trailers:key=Drover-Merge-Head,valueonly)", "main")
	for id, ev := range got {
		commit, head := mergedTo(t, ev)
		_, err := gitTry(r.remote.dir, "merge-base", "--is-ancestor", head, commit)
		require.NoError(t, err, "%s: the reported commit holds the head", id)
		_, err = gitTry(r.remote.dir, "merge-base", "--is-ancestor", commit, main)
		require.NoError(t, err, "%s: the reported commit is in main", id)
		require.Equal(t, "change of "+id, gitIn(t, r.remote.dir, "show", "main:tasks/"+id+".txt"))
		require.Equal(t, 1, strings.Count(trailers, head), "%s: merged once", id)
	}
	require.Len(t, strings.Fields(trailers), len(got), "one merge per task")
	return main
}

// mainPushes counts the pushes that moved main.
func (r *mergeRig) mainPushes() int {
	n := 0
	for _, p := range r.remote.pushes() {
		if strings.Contains(p, "refs/heads/main") {
			n++
		}
	}
	return n
}

// sessions reads main's merge log and asserts that no two merger sessions
// overlapped: a session starts only when none is open, or the open one's
// holder was killed (its lease expired); batches and ends belong to the
// open one. It returns the holders that pushed batches.
func (r *mergeRig) sessions(killed string) map[string]int {
	t := r.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log, err := mergequeue.ReadLog(ctx, r.js, mergequeue.NewNames(r.names), "main")
	require.NoError(t, err)
	require.NotEmpty(t, log)
	open, batches := "", map[string]int{}
	for i, rec := range log {
		switch rec.Kind {
		case mergequeue.LogStart:
			if open != "" {
				require.True(t, killed != "" && strings.HasPrefix(open, killed+"-"), "record %d: %s started while %s's session was open", i, rec.Holder, open)
			}
			open = rec.Holder
		case mergequeue.LogBatch:
			require.Equal(t, open, rec.Holder, "record %d: a batch outside its holder's session", i)
			batches[strings.SplitN(rec.Holder, "-", 2)[0]]++
		case mergequeue.LogEnd:
			require.Equal(t, open, rec.Holder, "record %d", i)
			open = ""
		}
	}
	return batches
}

// Two worker processes deliver 12 approved branches through the merge
// queue of main: three clash on shared.txt and one breaks the check, so
// three are sent back (the clash merged first goes in); the agent's next
// attempt fixes them. Main ends with all 12, pushed far fewer than 12
// times, by merger sessions that never overlapped, each change merged once.
func TestMergeQueueTwoWorkerProcesses(t *testing.T) {
	t.Parallel()
	r := newMergeRig(t, `[test, "!", -e, BROKEN]`)
	r.startMergeProc("A")
	r.startMergeProc("B")
	ids := []string{"clash-1", "ok-01", "ok-02", "clash-2", "ok-03", "ok-04", "broken-1", "ok-05", "clash-3", "ok-06", "ok-07", "ok-08"}
	after := r.submit(wsTasks("mq", ids...)...)
	got := r.waitTerminal("mq", after, len(ids))
	r.checkMerged(got)

	calls := r.agentCalls()
	back := 0
	for _, id := range ids {
		if calls[id] > 1 {
			back++
			require.NotEqual(t, "ok", id[:2], "%s was sent back", id)
		}
	}
	require.Equal(t, 3, back, "two clashes and the broken one were sent back: %v", calls)
	require.Equal(t, 2, calls["broken-1"])
	_, err := gitTry(r.remote.dir, "cat-file", "-e", "main:BROKEN")
	require.Error(t, err, "the check kept BROKEN out of main")

	pushes := r.mainPushes()
	t.Logf("pushes of main for 12 branches: %d (all pushes: %d)", pushes, r.remote.pushCount())
	require.LessOrEqual(t, pushes, 6, "far fewer pushes than branches")
	require.Len(t, r.remote.reflog("main"), pushes+1, "the remote's reflog of main: the seed and one entry per push")
	t.Logf("batches per worker: %v", r.sessions(""))
}

// SIGKILL of the worker process whose merger is running the check: the
// other worker's merger takes the target over once the lease expires; main
// ends sound with every change, each merged once.
func TestMergeQueueMergerKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mark, release := filepath.Join(dir, "checking"), filepath.Join(dir, "release")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) })
	// The sandbox shows the check the release file's directory, read-only:
	// it says it runs through a recorder.
	rec := newRecorder(t, dir)
	check := fmt.Sprintf(`[sh, -c, 'curl -fsS --noproxy "*" --max-time 30 --data-binary "" "$0"; while [ ! -e "$1" ]; do sleep 0.05; done', %q, %q]`,
		rec.URL(t, mark), release)
	r := newMergeRig(t, check)
	r.readOnly = []string{dir}
	a := r.startMergeProc("A")
	ids := []string{"ok-01", "ok-02", "ok-03", "ok-04"}
	after := r.submit(wsTasks("kill", ids...)...)
	require.Eventually(t, func() bool { _, err := os.Stat(mark); return err == nil }, 2*time.Minute, 20*time.Millisecond, "A's merger runs the check")
	r.startMergeProc("B")
	a.signal(syscall.SIGKILL)
	require.Error(t, a.wait(30*time.Second))
	require.NoError(t, os.WriteFile(release, nil, 0o644))

	got := r.waitTerminal("kill", after, len(ids))
	r.checkMerged(got)
	batches := r.sessions("A")
	require.Zero(t, batches["A"], "A pushed nothing")
	require.NotZero(t, batches["B"], "B took over")
}
