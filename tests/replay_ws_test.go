package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/replay"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// remoteRefs is what the remote holds: every ref with its reflog, and the
// pushes it received.
type remoteRefs struct {
	Refs   map[string][]string
	Pushes []string
}

// snapshot reads the remote's branches, their reflogs and its push log.
func (r *gitRemote) snapshot() remoteRefs {
	r.t.Helper()
	s := remoteRefs{Refs: map[string][]string{}, Pushes: r.pushes()}
	for _, b := range r.branches("") {
		s.Refs[b] = r.reflog(b)
	}
	return s
}

// replayWS re-runs workflow src as as with the rig's workspace block
// (push: true, as the fleet's: the re-run must not push) in a directory of
// its own, and returns the report and that directory.
func (r *wsRig) replayWS(src, as string, role subjects.Role, live runner.Runner) (*replay.Report, string) {
	r.t.Helper()
	dir := filepath.Join(r.t.TempDir(), "replay-workspaces")
	ws := r.wsConfig(r.configYAML(dir, wsOptions{}))
	require.True(r.t, ws.Push)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	obj, err := r.js.ObjectStore(ctx, r.names.BlobStore())
	require.NoError(r.t, err)
	rep, err := replay.Run(ctx, r.nc, replay.Options{Source: src, As: as, Role: role, Live: live, Expander: blobs.New(obj),
		Worker: worker.Config{Names: r.names, Concurrency: 4, FetchWait: time.Second, Workspace: ws}, Log: natstest.Quiet()})
	require.NoError(r.t, err)
	return rep, dir
}

// recordedFull is recorded with the blob references expanded.
func (r *wsRig) recordedFull(wf, id string) map[int]subjects.WorkspaceChange {
	r.t.Helper()
	ctx := context.Background()
	obj, err := r.js.ObjectStore(ctx, r.names.BlobStore())
	require.NoError(r.t, err)
	store := blobs.New(obj)
	out := map[int]subjects.WorkspaceChange{}
	for _, ev := range r.events(wf) {
		if ev.TaskID != id || ev.EventType != subjects.EventImplementerChange {
			continue
		}
		var meta struct {
			Workspace json.RawMessage `json:"workspace"`
		}
		require.NoError(r.t, json.Unmarshal(ev.Metadata, &meta))
		full, err := store.Expand(ctx, meta.Workspace)
		require.NoError(r.t, err)
		var ch subjects.WorkspaceChange
		require.NoError(r.t, json.Unmarshal(full, &ch))
		_, err = ch.PatchData()
		require.NoError(r.t, err, "%s attempt %d", id, ev.Attempt)
		out[ev.Attempt] = ch
	}
	return out
}

// advanceMain pushes a commit on the remote's main: a re-run must start
// from the recorded base, not from where main is now.
func (r *gitRemote) advanceMain() {
	r.t.Helper()
	clone := r.clone()
	require.NoError(r.t, os.WriteFile(filepath.Join(clone, "shared.txt"), []byte("main moved on\n"), 0o644))
	gitIn(r.t, clone, "commit", "-q", "-am", "main moves on")
	gitIn(r.t, clone, "push", "-q", "origin", "HEAD:main")
}

// A workflow run with workspaces (one task rejected once, one with a
// patch in the blob store), replayed after main moved on: every task
// matches, with zero agent calls; every replayed attempt, the rejected one
// included, re-applied its recorded change, so each replayed branch has
// the original branch's tree; and the replay pushed nothing.
func TestReplayWorkspaceReappliesRecordedChanges(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	r.startWSWorker(4, wsOptions{pushDelay: "100ms"})
	reqs := []subjects.TaskRequest{
		task("orig", "edit-1"),
		withSim(task("orig", "commit-1"), `{"judge_rejects": 1}`),
		task("orig", "delete-1"),
		task("orig", "binary-1"),
		task("orig", "big-1"),
	}
	after := r.submit(reqs...)
	for _, ev := range r.waitTerminal("orig", after, len(reqs)) {
		wsResult(t, ev)
	}
	require.Len(t, r.recorded("orig", "commit-1"), 2, "the first attempt was rejected")
	calls := r.agentCalls()
	require.Equal(t, len(reqs)+1, sumCalls(calls))
	r.remote.advanceMain()
	before := r.remote.snapshot()

	rep, dir := r.replayWS("orig", "orig-again", "", nil)

	require.Equal(t, len(reqs), rep.Summary.Matching, "%+v", rep.Tasks)
	require.Zero(t, rep.LiveCalls)
	require.Zero(t, rep.Diverged)
	require.Equal(t, calls, r.agentCalls(), "zero agent calls in the replay")
	require.Equal(t, before, r.remote.snapshot(), "the replay pushed nothing")
	mirror := filepath.Join(dir, "mirror.git")
	for _, tr := range rep.Tasks {
		old := r.recordedFull("orig", tr.Task)
		again := r.recordedFull("orig-again", tr.Task)
		require.True(t, tr.ChangesMatch, "%s: %+v", tr.Task, tr.Changes)
		require.Len(t, tr.Changes, len(old), tr.Task)
		require.Len(t, again, len(old), tr.Task)
		for a, ch := range old {
			require.Equal(t, ch.PatchSHA256, again[a].PatchSHA256, "%s attempt %d", tr.Task, a)
			require.Equal(t, ch.Base, again[a].Base, "%s attempt %d: the recorded base", tr.Task, a)
			require.Equal(t, r.remote.rev(ch.Head+"^{tree}"), gitIn(t, mirror, "rev-parse", again[a].Head+"^{tree}"),
				"%s attempt %d: the recorded tree", tr.Task, a)
			require.Equal(t, "drover/orig-again/"+tr.Task, again[a].Branch, "a branch of the replay's own")
		}
		require.Equal(t, r.remote.tree("drover/orig/"+tr.Task),
			gitIn(t, mirror, "rev-parse", "refs/heads/drover/orig-again/"+tr.Task+"^{tree}"), "%s: the original branch's tree", tr.Task)
	}
}

// A workflow whose judge approved everything, re-run with a judge that
// rejects a change without a test file: the counterfactual judge runs in
// a worktree holding the recorded change and is given exactly the
// recorded patch, the task without a test flips, and the agent is not
// called.
func TestReplayWorkspaceCounterfactualJudgeSeesRecordedDiff(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	r.startWSWorker(2, wsOptions{pushDelay: "100ms"})
	after := r.submit(wsTasks("approved", "edit-1", "tested-1")...)
	for _, ev := range r.waitTerminal("approved", after, 2) {
		wsResult(t, ev)
	}
	calls := r.agentCalls()
	before := r.remote.snapshot()
	judge, err := filepath.Abs(filepath.Join("testdata", "ws_test_judge.sh"))
	require.NoError(t, err)
	set := runnersFromConfig(t, fmt.Sprintf("roles:\n  planner: {runner: sim}\n  implementer: {runner: sim}\n  judge: {runner: exec, exec: {argv: [sh, %q], env: {JUDGE_DIR: %q}, inherit: [PATH]}}\n",
		judge, r.judgeDir))

	rep, _ := r.replayWS("approved", "approved-strict", subjects.RoleJudge, set.Judge)

	require.Equal(t, []string{"edit-1"}, rep.Summary.ApproveToReject, "%+v", rep.Tasks)
	require.Empty(t, rep.Summary.RejectToApprove)
	require.EqualValues(t, 2, rep.LiveCalls)
	require.Equal(t, calls, r.agentCalls(), "the implementer was not called")
	require.Equal(t, before, r.remote.snapshot(), "the re-run pushed nothing")
	for _, id := range []string{"edit-1", "tested-1"} {
		in := r.judgeInputs(id)
		require.Len(t, in, 1, id)
		var req runner.ExecInput
		require.NoError(t, json.Unmarshal([]byte(in[0]), &req))
		patch := r.recorded("approved", id)[1].Patch
		require.NotEmpty(t, patch)
		require.Contains(t, req.Prompt, patch, "%s: the judge sees the recorded patch", id)
	}
}

// drover replay --config takes the fleet's workspace: block: the re-run
// re-applies the recorded changes in a directory of its own (kept with
// --workspace-dir), pushes nothing, and its table says each task's
// workspace has the recorded trees.
func TestReplayWorkspaceCommand(t *testing.T) {
	t.Parallel()
	r := newWSRig(t)
	r.startWSWorker(2, wsOptions{pushDelay: "100ms"})
	after := r.submit(task("cmd", "edit-1"), withSim(task("cmd", "commit-1"), `{"judge_rejects": 1}`))
	for _, ev := range r.waitTerminal("cmd", after, 2) {
		wsResult(t, ev)
	}
	calls := r.agentCalls()
	before := r.remote.snapshot()
	cfg := filepath.Join(t.TempDir(), "drover.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(r.configYAML(filepath.Join(t.TempDir(), "fleet-workspaces"), wsOptions{})), 0o644))
	dir := filepath.Join(t.TempDir(), "replay-workspaces")

	code, out, errOut := r.drover("replay", "cmd", "--as", "cmd-again", "--config", cfg, "--workspace-dir", dir)

	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "matching the record: 2 of 2; runner calls: 0")
	require.Regexp(t, `commit-1\s+completed@2\s+completed@2\s+same\s+same\s+same\s+same`, out)
	require.Equal(t, calls, r.agentCalls())
	require.Equal(t, before, r.remote.snapshot(), "the replay pushed nothing")
	require.Equal(t, r.remote.tree("drover/cmd/commit-1"),
		gitIn(t, filepath.Join(dir, "mirror.git"), "rev-parse", "refs/heads/drover/cmd-again/commit-1^{tree}"))
}
