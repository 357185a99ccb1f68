package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/ops"
	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// wsRig is one workspace test's fixture: a NATS server, a bare git remote,
// the scripted agent's call log and the recording judge's directory.
type wsRig struct {
	*bundle
	remote   *gitRemote
	calls    string // the agent's call log: "<task> <attempt>" per call
	judgeDir string // the recording judge's inputs
	agent    string // tests/testdata/ws_agent.sh
	judge    string // tests/testdata/ws_judge.sh
	rec      *recorder
}

func newWSRig(t *testing.T) *wsRig {
	t.Helper()
	agent, err := filepath.Abs(filepath.Join("testdata", "ws_agent.sh"))
	require.NoError(t, err)
	judge, err := filepath.Abs(filepath.Join("testdata", "ws_judge.sh"))
	require.NoError(t, err)
	dir := t.TempDir()
	r := &wsRig{bundle: setup(t), remote: newGitRemote(t), calls: filepath.Join(dir, "calls.log"),
		judgeDir: filepath.Join(dir, "judge"), agent: agent, judge: judge, rec: newRecorder(t, dir)}
	require.NoError(t, os.Mkdir(r.judgeDir, 0o755))
	return r
}

// wsOptions shape a rig's configuration.
type wsOptions struct {
	execJudge bool     // the recording judge instead of the sim
	judgeWait string   // the file the recording judge waits for ("" none)
	pushBatch int      // default 8
	pushDelay string   // default 20s: a batch goes out when full (see TestWorkspaceSixteenTasks)
	noCache   bool     // cache: false on every role
	agentWait string   // the file the agent waits for after logging its call ("" none)
	extra     string   // appended to the config document
	readOnly  []string // further paths the sandbox shows (a merge check's)
}

// configYAML is a drover config file: planner on the sim, the scripted
// agent as the exec implementer, the sim or the recording judge, and
// workspaces in dir pushing to the rig's remote. The agent and the judge
// record their calls through the rig's recorder, and the sandbox shows
// them, read-only, the scripts and the files they wait for: drover serve
// contains them.
func (r *wsRig) configYAML(dir string, o wsOptions) string {
	if o.pushBatch == 0 {
		o.pushBatch = 8
	}
	if o.pushDelay == "" {
		o.pushDelay = "20s"
	}
	cache := ""
	if o.noCache {
		cache = "cache: false, "
	}
	judge := fmt.Sprintf("  judge: {%srunner: sim}\n", cache)
	if o.execJudge {
		judge = fmt.Sprintf("  judge: {%srunner: exec, exec: {argv: [sh, %q], env: {JUDGE_DIR: %q, JUDGE_WAIT: %q}, inherit: [PATH]}}\n",
			cache, r.judge, r.rec.URL(r.t, r.judgeDir), o.judgeWait)
	}
	readOnly := append([]string{filepath.Dir(r.agent), filepath.Dir(r.judge)}, o.readOnly...)
	for _, wait := range []string{o.agentWait, o.judgeWait} {
		if wait != "" {
			readOnly = append(readOnly, filepath.Dir(wait))
		}
	}
	sandbox, err := json.Marshal(map[string][]string{"read_only": readOnly})
	require.NoError(r.t, err)
	return fmt.Sprintf(`roles:
  planner: {%[1]srunner: sim}
  implementer: {%[1]srunner: exec, exec: {argv: [sh, %[2]q], env: {AGENT_CALL_LOG: %[3]q, AGENT_WAIT: %[4]q}, inherit: [PATH]}}
%[5]sworkspace:
  repo: %[6]q
  dir: %[7]q
  push: true
  push_batch: %[8]d
  push_delay: %[9]s
sandbox: %[11]s
%[10]s`, cache, r.agent, r.rec.URL(r.t, r.calls), o.agentWait, judge, r.remote.dir, dir, o.pushBatch, o.pushDelay, o.extra, sandbox)
}

// startWSWorker runs an in-process worker with its own workspace
// directory.
func (r *wsRig) startWSWorker(concurrency int, o wsOptions) *worker.Worker {
	r.t.Helper()
	doc := r.configYAML(filepath.Join(r.t.TempDir(), "workspaces"), o)
	set := runnersFromConfig(r.t, doc)
	ws := r.wsConfig(doc)
	ws.MaxWorktrees = concurrency
	return r.startWorker(worker.Config{Concurrency: concurrency, Runners: set, Workspace: ws})
}

// wsConfig reads the workspace block of a config document.
func (r *wsRig) wsConfig(doc string) workspace.Config {
	r.t.Helper()
	f, err := config.Parse([]byte(doc))
	require.NoError(r.t, err)
	return f.Workspace
}

// agentCalls counts the agent's calls per task.
func (r *wsRig) agentCalls() map[string]int {
	r.t.Helper()
	b, err := os.ReadFile(r.calls)
	if os.IsNotExist(err) {
		return map[string]int{}
	}
	require.NoError(r.t, err)
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if task, _, ok := strings.Cut(line, " "); ok {
			out[task]++
		}
	}
	return out
}

// judgeInputs returns what the recording judge was given for a task, one
// request per call, in no particular order.
func (r *wsRig) judgeInputs(task string) []string {
	r.t.Helper()
	paths, err := filepath.Glob(filepath.Join(r.judgeDir, task+".*.json"))
	require.NoError(r.t, err)
	sort.Strings(paths)
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(r.t, err)
		out = append(out, string(b))
	}
	return out
}

// judgeCalls counts the recording judge's calls for a task (for Eventually).
func (r *wsRig) judgeCalls(task string) int {
	paths, _ := filepath.Glob(filepath.Join(r.judgeDir, task+".*.json"))
	return len(paths)
}

// tasks are the requests of a board: one per ID, in workflow wf.
func wsTasks(wf string, ids ...string) []subjects.TaskRequest {
	out := make([]subjects.TaskRequest, len(ids))
	for i, id := range ids {
		out[i] = task(wf, id)
	}
	return out
}

// wsResult is result.workspace of a completed task.
func wsResult(t *testing.T, ev subjects.AuditEvent) subjects.WorkspaceResult {
	t.Helper()
	require.Equal(t, subjects.EventTaskCompleted, ev.EventType, "%s: %s %s", ev.TaskID, ev.Action, ev.Error)
	var out struct {
		Workspace *subjects.WorkspaceResult `json:"workspace"`
	}
	require.NoError(t, json.Unmarshal(ev.Output, &out))
	require.NotNil(t, out.Workspace, "task_completed of %s has no workspace: %s", ev.TaskID, ev.Output)
	return *out.Workspace
}

// recorded returns the change each implementer attempt of a task recorded,
// by attempt.
func (r *wsRig) recorded(wf, id string) map[int]subjects.WorkspaceChange {
	r.t.Helper()
	out := map[int]subjects.WorkspaceChange{}
	for _, ev := range r.events(wf) {
		if ev.TaskID != id || ev.EventType != subjects.EventImplementerChange {
			continue
		}
		var meta struct {
			Workspace *subjects.WorkspaceChange `json:"workspace"`
		}
		require.NoError(r.t, json.Unmarshal(ev.Metadata, &meta))
		require.NotNil(r.t, meta.Workspace, "implementer_change of %s attempt %d records no change", id, ev.Attempt)
		out[ev.Attempt] = *meta.Workspace
	}
	return out
}

// ceilDiv is a/b rounded up.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// 16 tasks at pool 16 on one worker, each agent editing its own file and
// one shared file: 16 branches, each holding exactly its own change from
// the pinned base, written once each, in at most ceil(16/8) pushes.
func TestWorkspaceSixteenTasks(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	// A long push delay: a batch goes out when it is full, so the count
	// of pushes does not depend on how the approvals spread over time.
	const batch = 8
	w := r.startWSWorker(16, wsOptions{pushBatch: batch, pushDelay: "20s"})
	var ids []string
	for i := range 16 {
		ids = append(ids, fmt.Sprintf("edit-%02d", i))
	}
	after := r.submit(wsTasks("ws16", ids...)...)
	got := r.waitTerminal("ws16", after, 16)

	require.Len(t, r.remote.branches("drover/ws16/"), 16)
	for _, id := range ids {
		res := wsResult(t, got[id])
		branch := "drover/ws16/" + id
		require.Equal(t, branch, res.Branch)
		require.Equal(t, r.remote.base, res.Base, "%s: the pinned base", id)
		require.True(t, res.Pushed, id)
		require.Equal(t, res.Head, r.remote.rev("refs/heads/"+branch), "%s: the approved head is on the remote", id)
		require.Equal(t, []string{"shared.txt", "tasks/" + id + ".txt"}, r.remote.changed(branch), "%s: exactly its own change", id)
		diff := gitIn(t, r.remote.dir, "diff", r.remote.base, "refs/heads/"+branch, "--", "shared.txt")
		require.Contains(t, diff, "+"+id+" was here")
		require.Equal(t, 1, strings.Count(diff, "\n+")-strings.Count(diff, "\n+++"), "%s: one line added to shared.txt", id)
		require.Len(t, r.remote.reflog(branch), 1, "%s: written once", id)
	}
	require.LessOrEqual(t, r.remote.pushCount(), ceilDiv(16, batch), "pushes: %v", r.remote.pushes())
	require.Equal(t, 16, sumCalls(r.agentCalls()), "one agent call per task")

	st := w.Status().Workspaces
	require.NotNil(t, st)
	require.EqualValues(t, r.remote.pushCount(), st.Pushes)
	require.EqualValues(t, 16, st.PushedRefs)
	require.Positive(t, st.DiskBytes)
	require.LessOrEqual(t, st.Worktrees, 16, "never more worktrees than pool slots")

	// drover status shows them.
	code, out, errOut := r.drover("status")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "WORKSPACES")
	require.Regexp(t, `\n\S+\s+\d+\s+\d+\s+\d+\s+\S+ \S*B\s+\d+\s+\d+\s+16\s+\d+\n`, out)
}

func sumCalls(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// An agent that commits itself, one that changes nothing, one that deletes
// a file and one that writes a binary file are all recorded: drover task
// diff prints a patch that git apply --index takes on the base in a fresh
// clone, giving the branch's tree; drover audit shows each change.
func TestWorkspaceRecordsEveryKindOfChange(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	r.startWSWorker(4, wsOptions{pushDelay: "100ms"})
	ids := []string{"commit-1", "nothing-1", "delete-1", "binary-1", "big-1"}
	after := r.submit(wsTasks("kinds", ids...)...)
	got := r.waitTerminal("kinds", after, len(ids))

	for _, id := range ids {
		res := wsResult(t, got[id])
		code, patch, errOut := r.drover("task", "diff", "kinds/"+id)
		require.Equal(t, 0, code, "%s: %s", id, errOut)
		require.Contains(t, errOut, "base "+r.remote.base)
		clone := r.remote.clone()
		if patch != "" {
			p := filepath.Join(t.TempDir(), id+".patch")
			require.NoError(t, os.WriteFile(p, []byte(patch), 0o644))
			gitIn(t, clone, "apply", "--index", p)
		}
		require.Equal(t, r.remote.tree(res.Branch), gitIn(t, clone, "write-tree"), "%s: the patch gives the branch's tree", id)
		require.Equal(t, gitIn(t, r.remote.dir, "rev-parse", res.Head+"^{tree}"), r.remote.tree(res.Branch))
	}
	require.Equal(t, []string{"doomed.txt"}, r.remote.changed("drover/kinds/delete-1"))
	require.Empty(t, r.remote.changed("drover/kinds/nothing-1"))
	require.Equal(t, []string{"bin/binary-1.bin"}, r.remote.changed("drover/kinds/binary-1"))
	require.Equal(t, []string{"big.txt"}, r.remote.changed("drover/kinds/big-1"))
	require.Equal(t, []string{"shared.txt", "tasks/commit-1.txt"}, r.remote.changed("drover/kinds/commit-1"))
	// The agent's own commit is kept in the branch's history.
	require.Contains(t, gitIn(t, r.remote.dir, "log", "--format=%s", r.remote.base+"..refs/heads/drover/kinds/commit-1"), "agent: commit-1 by itself")

	nothing := r.recorded("kinds", "nothing-1")[1]
	require.True(t, nothing.Empty, "an attempt that changed nothing says so")
	require.Empty(t, nothing.Files)
	binary := r.recorded("kinds", "binary-1")[1]
	require.Len(t, binary.Files, 1)
	require.True(t, binary.Files[0].Binary)
	deleted := r.recorded("kinds", "delete-1")[1]
	require.Equal(t, []subjects.WorkspaceFile{{Path: "doomed.txt", Status: "D", Removed: 1}}, deleted.Files)

	code, out, errOut := r.drover("audit", "--workflow", "kinds", "--type", "implementer_change")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "1 file +0 -1: D doomed.txt (+0 -1)")
	require.Contains(t, out, "1 file +0 -0: A bin/binary-1.bin (binary)")
	require.Contains(t, out, "2 files +2 -0: M shared.txt (+1 -0), A tasks/commit-1.txt (+1 -0)")
	require.Contains(t, out, "no change")
	require.Contains(t, out, "1 file +3000 -0: A big.txt (+3000 -0)")
	// The big patch is in the blob store, not inline: drover task diff
	// fetched it above.
	for _, ev := range r.events("kinds") {
		if ev.TaskID == "big-1" && ev.EventType == subjects.EventImplementerChange {
			require.Contains(t, string(ev.Metadata), `"blob"`)
			require.Less(t, len(ev.Metadata), 32<<10)
		}
	}

	// A task without a recorded change, and an attempt that does not exist.
	code, _, errOut = r.drover("task", "diff", "kinds/none-1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no implementer_change event")
	code, _, errOut = r.drover("task", "diff", "kinds/commit-1", "--attempt", "2")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no implementer_change event of attempt 2")
}

// The recording judge's request holds the diff; a rejected attempt's
// second try starts from the first attempt's commit.
func TestWorkspaceJudgeSeesDiffAndRetryBuildsOnFirstAttempt(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	r.startWSWorker(2, wsOptions{execJudge: true, pushDelay: "100ms"})
	after := r.submit(task("judged", "edit-1"))
	got := r.waitTerminal("judged", after, 1)
	wsResult(t, got["edit-1"])
	in := r.judgeInputs("edit-1")
	require.Len(t, in, 1)
	var req runner.ExecInput
	require.NoError(t, json.Unmarshal([]byte(in[0]), &req))
	require.Contains(t, req.Prompt, "tasks/edit-1.txt", "the diff stat")
	require.Contains(t, req.Prompt, "+change of edit-1", "the patch")
	require.Contains(t, req.Prompt, "+edit-1 was here")

	// The sim judge rejects the first attempt.
	sim := withSim(task("judged", "edit-2"), `{"judge_rejects": 1}`)
	r2 := newWSRig(t)
	r2.startWSWorker(2, wsOptions{pushDelay: "100ms"})
	after = r2.submit(withSimWF(sim, "rejected"))
	res := wsResult(t, r2.waitTerminal("rejected", after, 1)["edit-2"])
	rec := r2.recorded("rejected", "edit-2")
	require.Len(t, rec, 2)
	first, second := rec[1].Head, rec[2].Head
	require.Equal(t, second, res.Head)
	require.Equal(t, first, r2.remote.rev(second+"^"), "the second attempt's commit sits on the first's")
	require.Equal(t, "change of edit-2\nattempt 2\n", gitIn(t, r2.remote.dir, "show", second+":tasks/edit-2.txt")+"\n")
	require.Equal(t, map[string]int{"edit-2": 2}, r2.agentCalls())

	// drover task diff: the last attempt by default, or the one asked for;
	// each patch is from the base and gives that attempt's tree.
	for _, tc := range []struct {
		args []string
		head string
	}{
		{[]string{"task", "diff", "rejected/edit-2"}, second},
		{[]string{"task", "diff", "rejected/edit-2", "--attempt", "2"}, second},
		{[]string{"task", "diff", "--workflow", "rejected", "--id", "edit-2", "--attempt", "1"}, first},
	} {
		code, patch, errOut := r2.drover(tc.args...)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, errOut, "head "+tc.head)
		clone := r2.remote.clone()
		p := filepath.Join(t.TempDir(), "attempt.patch")
		require.NoError(t, os.WriteFile(p, []byte(patch), 0o644))
		gitIn(t, clone, "apply", "--index", p)
		require.Equal(t, r2.remote.rev(tc.head+"^{tree}"), gitIn(t, clone, "write-tree"), "%v", tc.args)
	}
}

// withSimWF moves a request to another workflow.
func withSimWF(r subjects.TaskRequest, wf string) subjects.TaskRequest { r.Workflow = wf; return r }

// Re-running the same board under a new workflow on the same base gives
// every branch the identical tree, with zero agent calls: the cached
// changes are replayed.
func TestWorkspaceCachedRerun(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	r.startWSWorker(4, wsOptions{pushDelay: "100ms"})
	ids := []string{"edit-1", "commit-1", "delete-1", "binary-1"}
	after := r.submit(wsTasks("run-1", ids...)...)
	for id, ev := range r.waitTerminal("run-1", after, len(ids)) {
		wsResult(t, ev)
		_ = id
	}
	calls := r.agentCalls()
	require.Equal(t, len(ids), sumCalls(calls))

	after = r.submit(wsTasks("run-2", ids...)...)
	for _, ev := range r.waitTerminal("run-2", after, len(ids)) {
		wsResult(t, ev)
	}
	require.Equal(t, calls, r.agentCalls(), "zero agent calls in the re-run")
	for _, id := range ids {
		require.Equal(t, r.remote.tree("drover/run-1/"+id), r.remote.tree("drover/run-2/"+id), "%s: identical tree", id)
	}
	for _, ev := range r.events("run-2") {
		if ev.EventType == subjects.EventImplementerChange {
			require.True(t, ev.Cached, "%s: served from the cache", ev.TaskID)
		}
	}
}

// A push the remote refuses for one branch fails that task only, with one
// DLQ entry (push_rejected); a remote that is down while tasks are approved
// delays their pushes (the worker is not ready meanwhile, saying why) and
// then pushes everything.
func TestWorkspacePushRejectedAndRemoteDown(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	r.remote.hook("update", "#!/bin/sh\ncase \"$1\" in refs/heads/drover/push/edit-bad) echo \"no, not $1\" >&2; exit 1;; esac\n")
	release := filepath.Join(t.TempDir(), "release-judges")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) }) // no judge left waiting, whatever happens
	w := r.startWSWorker(4, wsOptions{execJudge: true, judgeWait: release, pushBatch: 4, pushDelay: "100ms"})

	ids := []string{"edit-a", "edit-bad", "edit-b"}
	after := r.submit(wsTasks("push", ids...)...)
	// Every task waits in its judge: take the remote away, then let them
	// be approved.
	require.Eventually(t, func() bool {
		return r.judgeCalls("edit-a")+r.judgeCalls("edit-bad")+r.judgeCalls("edit-b") == 3
	}, 30*time.Second, 10*time.Millisecond)
	away := r.remote.dir + ".away"
	require.NoError(t, os.Rename(r.remote.dir, away))
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	// The pushes fail and are retried; the worker says why it is not ready.
	require.Eventually(t, func() bool {
		st := w.Status().Workspaces
		return st != nil && st.PushRetries > 0
	}, 30*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		err := w.CheckReady()
		return err != nil && strings.Contains(err.Error(), "unreachable")
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, os.Rename(away, r.remote.dir))

	got := r.waitTerminal("push", after, len(ids))
	for _, id := range []string{"edit-a", "edit-b"} {
		res := wsResult(t, got[id])
		require.True(t, res.Pushed)
		require.Equal(t, res.Head, r.remote.rev("refs/heads/drover/push/"+id), "%s: pushed once the remote is back", id)
	}
	bad := got["edit-bad"]
	require.Equal(t, subjects.EventTaskFailed, bad.EventType)
	require.Equal(t, string(subjects.ReasonPushRejected), bad.Action)
	require.NotContains(t, r.remote.branches("drover/push/"), "drover/push/edit-bad")
	dead := r.dlq()
	require.Len(t, dead, 1, "one DLQ entry")
	require.Equal(t, "edit-bad", dead[0].Header.Get(subjects.HeaderTask))
	require.Equal(t, string(subjects.ReasonPushRejected), dead[0].Header.Get(subjects.HeaderReason))
	require.Eventually(t, func() bool { return w.CheckReady() == nil }, 30*time.Second, 10*time.Millisecond, "ready again")
}

// startWSProc runs a worker process with a workspace directory of its own.
func (r *wsRig) startWSProc(id string, o wsOptions, args ...string) *proc {
	r.t.Helper()
	cfg := filepath.Join(r.t.TempDir(), "drover.yaml")
	require.NoError(r.t, os.WriteFile(cfg, []byte(r.configYAML(filepath.Join(r.t.TempDir(), "workspaces"), o)), 0o644))
	return r.startProc(append([]string{"--config", cfg, "--worker-id", id, "--ack-wait", "2s"}, args...)...)
}

// SIGKILL of a worker process while the judge runs: the task completes on
// another worker process with its own workspace directory; that judge sees
// the same diff, the implementer is not called again, and the branch is
// pushed once.
func TestWorkspaceWorkerKilledWhileJudging(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	release := filepath.Join(t.TempDir(), "release-judges")
	t.Cleanup(func() { _ = os.WriteFile(release, nil, 0o644) }) // no judge left waiting, whatever happens
	o := wsOptions{execJudge: true, judgeWait: release, pushDelay: "100ms"}
	a := r.startWSProc("A", o)
	after := r.submit(task("kill", "edit-1"))
	require.Eventually(t, func() bool { return r.judgeCalls("edit-1") == 1 }, 60*time.Second, 10*time.Millisecond, "A's judge runs")
	a.signal(syscall.SIGKILL)
	require.Error(t, a.wait(30*time.Second))

	r.startWSProc("B", o)
	require.Eventually(t, func() bool { return r.judgeCalls("edit-1") == 2 }, 60*time.Second, 10*time.Millisecond, "B's judge runs")
	require.NoError(t, os.WriteFile(release, nil, 0o644))
	res := wsResult(t, r.waitTerminal("kill", after, 1)["edit-1"])

	in := r.judgeInputs("edit-1")
	require.Len(t, in, 2)
	var first, second runner.ExecInput
	require.NoError(t, json.Unmarshal([]byte(in[0]), &first))
	require.NoError(t, json.Unmarshal([]byte(in[1]), &second))
	require.Contains(t, first.Prompt, "+change of edit-1")
	// B rebuilt the change from the record on its own mirror: the same
	// diff, from the same base, in a commit of its own.
	heads := regexp.MustCompile(`head [0-9a-f]{7,40}`)
	require.Equal(t, heads.ReplaceAllString(first.Prompt, "head H"), heads.ReplaceAllString(second.Prompt, "head H"), "both judges see the same diff")
	rec := r.recorded("kill", "edit-1")
	require.Len(t, rec, 1, "one recorded attempt")
	clone := r.remote.clone()
	patch := filepath.Join(t.TempDir(), "edit-1.patch")
	require.NoError(t, os.WriteFile(patch, []byte(rec[1].Patch), 0o644))
	gitIn(t, clone, "apply", "--index", patch)
	require.Equal(t, gitIn(t, clone, "write-tree"), r.remote.tree(res.Branch), "the pushed tree is the recorded change's")
	require.Equal(t, map[string]int{"edit-1": 1}, r.agentCalls(), "the implementer is not called again")
	require.True(t, res.Pushed)
	require.Equal(t, []string{res.Head}, r.remote.reflog(res.Branch), "pushed once")
	require.Equal(t, 1, r.remote.pushCount(), "pushes: %v", r.remote.pushes())
}

// Two worker processes with separate workspace directories share one
// remote: every task ends once, and no branch is written by both (one
// write each, every commit carrying its own task's trailer).
func TestWorkspaceTwoWorkerProcesses(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	o := wsOptions{pushBatch: 4, pushDelay: "200ms"}
	r.startWSProc("A", o, "--concurrency", "4")
	r.startWSProc("B", o, "--concurrency", "4")
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("edit-%02d", i))
	}
	after := r.submit(wsTasks("two", ids...)...)
	got := r.waitTerminal("two", after, len(ids))

	terminal := map[string]int{}
	for _, ev := range r.events("two") {
		if ev.EventType.Terminal() {
			terminal[ev.TaskID]++
		}
	}
	for _, id := range ids {
		res := wsResult(t, got[id])
		require.Equal(t, 1, terminal[id], "%s: one terminal event", id)
		require.Equal(t, []string{res.Head}, r.remote.reflog(res.Branch), "%s: one write", id)
		tasks := gitIn(t, r.remote.dir, "log", "--format=%(trailers:key=Drover-Task,valueonly)", r.remote.base+".."+res.Head)
		require.Equal(t, id, strings.TrimSpace(tasks), "%s: the branch holds only its own task's commits", id)
		require.Equal(t, []string{"shared.txt", "tasks/" + id + ".txt"}, r.remote.changed(res.Branch))
	}
	calls := r.agentCalls()
	for _, id := range ids {
		require.Equal(t, 1, calls[id], "%s: one agent call", id)
	}
}

// /readyz is not ready, saying why, while the workspace repository cannot
// be reached; the worker fetches no task meanwhile (the task waits, it is
// not failed) and runs it once the repository is back.
func TestReadyzWorkspaceRepositoryDown(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	doc := r.configYAML(filepath.Join(t.TempDir(), "workspaces"), wsOptions{pushDelay: "100ms"})
	nc, err := nats.Connect(r.url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	m := ops.NewMetrics()
	w, err := worker.New(nc, worker.Config{Concurrency: 2, Runners: runnersFromConfig(t, doc), Workspace: r.wsConfig(doc),
		Metrics: m, Log: natstest.Quiet(), FetchWait: time.Second})
	require.NoError(t, err)
	get := serveOps(t, w, m)
	runOwned(t, w)
	awaitReady(t, w)

	away := r.remote.dir + ".away"
	require.NoError(t, os.Rename(r.remote.dir, away))
	require.Eventually(t, func() bool { return w.CheckReady() != nil }, 30*time.Second, 10*time.Millisecond)
	code, body := get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "workspace repository "+r.remote.dir+" unreachable")

	// While not ready the consumer stops fetching: once its last pull
	// request has expired, a task submitted stays pending.
	consumerInfo := func() *jetstream.ConsumerInfo {
		c, err := r.js.Consumer(t.Context(), r.names.TasksStream(), r.names.Consumer(subjects.DefaultQueue))
		require.NoError(t, err)
		ci, err := c.Info(t.Context())
		require.NoError(t, err)
		return ci
	}
	require.Eventually(t, func() bool { return consumerInfo().NumWaiting == 0 }, 30*time.Second, 10*time.Millisecond, "no pull request outstanding")
	after := r.submit(task("ready", "edit-1"))
	ci := consumerInfo()
	require.Equal(t, uint64(1), ci.NumPending)
	require.Zero(t, ci.NumAckPending)
	require.Zero(t, ci.NumWaiting)
	require.Empty(t, r.agentCalls())

	require.NoError(t, os.Rename(away, r.remote.dir))
	require.Eventually(t, func() bool { return w.CheckReady() == nil }, 30*time.Second, 10*time.Millisecond)
	code, body = get("/readyz")
	require.Equal(t, http.StatusOK, code, body)
	wsResult(t, r.waitTerminal("ready", after, 1)["edit-1"])
}

// The sim judge is given the diff too: a recording runner around the sim
// (in-process, planner and implementer on the sim, whose implementer edits
// the worktree) gets the diff stat and the patch, and the judge's prompt
// rendered from that request shows them.
func TestWorkspaceSimJudgeSeesDiff(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	sim := runner.NewSim(runner.SimOptions{})
	var (
		mu   sync.Mutex
		seen []runner.Request
	)
	judge := runner.Func{ID: sim.Identity(), F: func(ctx context.Context, req runner.Request) (runner.Result, error) {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		return sim.Run(ctx, req)
	}}
	doc := r.configYAML(filepath.Join(t.TempDir(), "workspaces"), wsOptions{pushDelay: "100ms"})
	r.startWorker(worker.Config{Concurrency: 2, Runners: runner.Set{Planner: sim, Implementer: sim, Judge: judge}, Workspace: r.wsConfig(doc)})
	after := r.submit(task("simjudge", "T1"))
	res := wsResult(t, r.waitTerminal("simjudge", after, 1)["T1"])

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 1)
	ws := seen[0].Workspace
	require.NotNil(t, ws, "the judge runs in the workspace")
	require.Equal(t, res.Head, ws.Head)
	require.Equal(t, r.remote.base, ws.Base)
	changed := r.remote.changed(res.Branch)
	require.NotEmpty(t, changed, "the sim implementer edits the worktree")
	for _, f := range changed {
		require.Contains(t, ws.Stat, f)
		require.Contains(t, ws.Patch, "diff --git a/"+f)
	}
	text, err := prompt.Defaults().Render(subjects.RoleJudge, prompt.Data{Role: subjects.RoleJudge, Task: seen[0].Task, Attempt: 1,
		Change: string(seen[0].Change), Workspace: &prompt.Workspace{Branch: ws.Branch, Base: ws.Base, Head: ws.Head, Stat: ws.Stat,
			Patch: ws.Patch, PatchNote: ws.PatchNote, Empty: ws.Empty}})
	require.NoError(t, err)
	require.Contains(t, text, ws.Patch, "the judge's prompt holds the patch")
	require.Contains(t, text, ws.Stat, "and the diff stat")
}

// drover task diff of a task that ran without a workspace says so.
func TestTaskDiffWithoutWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	simWorker(b, runner.NewSim(runner.SimOptions{}), 1)
	after := b.submit(task("plain", "T1"))
	require.Equal(t, subjects.EventTaskCompleted, b.waitTerminal("plain", after, 1)["T1"].EventType)
	code, out, errOut := b.drover("task", "diff", "plain/T1")
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "task plain/T1 attempt 1: no recorded change: the task ran without a workspace")
	code, _, errOut = b.drover("task", "diff", "plain/T1", "--attempt", "-1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--attempt -1")
}
