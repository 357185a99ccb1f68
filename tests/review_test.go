package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/review"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// reviewRig is a workspace rig whose implementer records its requests
// (review_agent.sh) and whose judge is the recording judge.
type reviewRig struct {
	*wsRig
	prompts string // the implementer's requests, <task>.<attempt>.json
}

func newReviewRig(t *testing.T) *reviewRig {
	r := &reviewRig{wsRig: newWSRig(t), prompts: filepath.Join(t.TempDir(), "prompts")}
	require.NoError(t, os.Mkdir(r.prompts, 0o755))
	return r
}

// worker builds (but does not run) a worker with its own workspace
// directory and the review policy.
func (r *reviewRig) worker(concurrency int, policy pipeline.ReviewPolicy) *worker.Worker {
	r.t.Helper()
	agent, err := filepath.Abs(filepath.Join("testdata", "review_agent.sh"))
	require.NoError(r.t, err)
	doc := fmt.Sprintf(`roles:
  planner: {runner: sim}
  implementer: {runner: exec, exec: {argv: [sh, %q], env: {AGENT_CALL_LOG: %q, PROMPT_DIR: %q}, inherit: [PATH]}}
  judge: {runner: exec, exec: {argv: [sh, %q], env: {JUDGE_DIR: %q}, inherit: [PATH]}}
workspace:
  repo: %q
  dir: %q
  push: true
  push_delay: 50ms
`, agent, r.calls, r.prompts, r.judge, r.judgeDir, r.remote.dir, filepath.Join(r.t.TempDir(), "workspaces"))
	ws := r.wsConfig(doc)
	ws.MaxWorktrees = concurrency
	nc, err := nats.Connect(r.url)
	require.NoError(r.t, err)
	r.t.Cleanup(nc.Close)
	w, err := worker.New(nc, worker.Config{Concurrency: concurrency, Runners: runnersFromConfig(r.t, doc), Workspace: ws,
		FetchWait: 200 * time.Millisecond, Log: natstest.Quiet(),
		Pipeline: pipeline.Config{RetryBase: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond, Review: policy}})
	require.NoError(r.t, err)
	return w
}

// waiting lists the tasks awaiting review (for Eventually: no test to fail).
func (r *reviewRig) waiting() []string {
	kv, err := r.js.KeyValue(context.Background(), r.names.StateBucket())
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := review.Waiting(ctx, kv)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range list {
		out = append(out, t.Workflow+"/"+t.Task)
	}
	return out
}

func (r *reviewRig) waitWaiting(n int) {
	r.t.Helper()
	require.Eventually(r.t, func() bool { return len(r.waiting()) == n }, 60*time.Second, 50*time.Millisecond,
		"want %d tasks awaiting review", n)
}

// decide sends a decision as a raw NATS request, as any client can.
func (r *reviewRig) decide(wf, task, decision, comment string) subjects.ReviewReply {
	r.t.Helper()
	body, err := json.Marshal(subjects.ReviewDecisionRequest{Decision: decision, Comment: comment, Reviewer: "raw@nats"})
	require.NoError(r.t, err)
	msg, err := r.nc.Request(r.names.ReviewSubject(wf, task), body, 30*time.Second)
	require.NoError(r.t, err)
	var reply subjects.ReviewReply
	require.NoError(r.t, json.Unmarshal(msg.Data, &reply), "%s", msg.Data)
	return reply
}

// prompt is what the implementer was given for a task's attempt.
func (r *reviewRig) prompt(task string, attempt int) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.prompts, fmt.Sprintf("%s.%d.json", task, attempt)))
	require.NoError(r.t, err)
	var in runner.ExecInput
	require.NoError(r.t, json.Unmarshal(b, &in))
	return in.Prompt
}

// A worker with a pool of 2 holds 10 tasks awaiting review and still runs
// new ones; the waiting tasks survive a restart of the only worker; they
// are approved through the CLI and through raw NATS requests, pushed and
// completed; a second decision on a task is refused.
func TestReviewWaitsWithoutAPoolSlotAndSurvivesARestart(t *testing.T) {
	t.Parallel()
	r := newReviewRig(t)
	// The gate is off for the queue; the ten tasks raise it (a request
	// may raise the level, never lower it).
	policy := pipeline.ReviewPolicy{Mode: subjects.ReviewOff}
	stopA, _ := runOwned(t, r.worker(2, policy))
	var ids []string
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("edit-%02d", i))
	}
	gated := wsTasks("rv", ids...)
	for i := range gated {
		gated[i].Review = subjects.ReviewAfterJudge
	}
	after := r.submit(gated...)
	r.waitWaiting(10)

	// Two more tasks with the gate off complete on the same pool of 2.
	afterFree := r.submit(wsTasks("rv-free", "edit-free1", "edit-free2")...)
	got := r.waitTerminal("rv-free", afterFree, 2)
	for _, id := range []string{"edit-free1", "edit-free2"} {
		require.True(t, wsResult(t, got[id]).Pushed, id)
	}
	require.Equal(t, []string(nil), r.remote.branches("drover/rv/"), "nothing awaiting review is pushed")

	// Every worker restarts: nothing is lost.
	require.NoError(t, stopA())
	runOwned(t, r.worker(2, policy))
	require.Len(t, r.waiting(), 10)

	code, out, errOut := r.drover("review", "ls")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "TASK")
	require.Equal(t, 10, strings.Count(out, "after_judge"), out)
	code, out, errOut = r.drover("review", "show", "rv/edit-03")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"awaiting_review", "scope:", "do edit-03", "plan:", "verdict:", "the diff is fine", "diff ", "+change of edit-03"} {
		require.Contains(t, out, want)
	}

	for i, id := range ids {
		if i%2 == 0 {
			code, out, errOut := r.drover("review", "approve", "rv/"+id, "--comment", "looks good", "--reviewer", "alice@example")
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "approved by alice@example")
		} else {
			reply := r.decide("rv", id, subjects.ReviewApprove, "")
			require.Empty(t, reply.Error)
			require.Equal(t, "rv", reply.Workflow)
			require.Equal(t, id, reply.Task)
			require.NotZero(t, reply.Revision)
		}
	}
	got = r.waitTerminal("rv", after, 10)
	for _, id := range ids {
		res := wsResult(t, got[id])
		require.True(t, res.Pushed, id)
		require.Equal(t, res.Head, r.remote.rev("refs/heads/drover/rv/"+id), id)
	}
	require.Empty(t, r.waiting())

	// A second decision is refused, through NATS and the CLI.
	reply := r.decide("rv", "edit-01", subjects.ReviewReject, "too late")
	require.Contains(t, reply.Error, "already decided")
	code, _, errOut = r.drover("review", "reject", "rv/edit-00", "--comment", "too late")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "already decided")

	// The audit trail: one request and one decision per task, by a human.
	decided := map[string]int{}
	for _, ev := range r.events("rv") {
		switch ev.EventType {
		case subjects.EventReviewRequested:
			require.Equal(t, subjects.ActorSystem, ev.Actor)
		case subjects.EventReviewDecided:
			require.Equal(t, subjects.ActorHuman, ev.Actor)
			require.Equal(t, subjects.ReviewApprove, ev.Action)
			decided[ev.TaskID]++
			var md map[string]string
			require.NoError(t, json.Unmarshal(ev.Metadata, &md))
			require.Contains(t, []string{"alice@example", "raw@nats"}, md["reviewer"])
		}
	}
	require.Len(t, decided, 10)
	for id, n := range decided {
		require.Equal(t, 1, n, id)
	}
	require.Equal(t, 12, sumCalls(r.agentCalls()), "one implementer call per task")
	r.verifyAudit()
}

// verifyAudit checks the audit stream with drover audit verify: review
// events in their place.
func (r *reviewRig) verifyAudit() {
	r.t.Helper()
	code, out, errOut := r.drover("audit", "verify")
	if code != 0 {
		for _, ev := range r.events("") {
			if ev.EventType == subjects.EventTaskRetried {
				r.t.Logf("retried: %s %s", ev.EventID, ev.Error)
			}
		}
	}
	require.Equal(r.t, 0, code, "%s\n%s", out, errOut)
	require.Contains(r.t, out, ": OK")
}

// With review instead, a person is the judge: the judge never runs. A
// rejection's comment is in the implementer's next prompt, and the new
// attempt continues on the first one's commit, even one the agent made
// itself.
func TestReviewInsteadRejectionReachesTheImplementer(t *testing.T) {
	t.Parallel()
	r := newReviewRig(t)
	runOwned(t, r.worker(2, pipeline.ReviewPolicy{}))
	req := task("rvi", "commit-1")
	req.Review = subjects.ReviewInstead
	after := r.submit(req)
	r.waitWaiting(1)

	const comment = "please also handle the empty input"
	code, out, errOut := r.drover("review", "reject", "rvi/commit-1", "--comment", comment, "--reviewer", "bob")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "rejected by bob")
	require.Eventually(t, func() bool {
		l := r.waiting()
		return len(l) == 1 && r.agentCalls()["commit-1"] == 2
	}, 60*time.Second, 50*time.Millisecond)
	require.NotContains(t, r.prompt("commit-1", 1), comment)
	require.Contains(t, r.prompt("commit-1", 2), comment, "the reviewer's comment is the implementer's feedback")

	reply := r.decide("rvi", "commit-1", subjects.ReviewApprove, "")
	require.Empty(t, reply.Error)
	got := r.waitTerminal("rvi", after, 1)
	res := wsResult(t, got["commit-1"])
	require.Equal(t, 0, r.judgeCalls("commit-1"), "the judge never runs")
	// Each attempt is the agent's own commit and Drover's with the
	// trailers on top (empty: the agent committed everything itself).
	require.Equal(t, "drover: commit-1 attempt 2\nagent: commit-1 by itself\ndrover: commit-1 attempt 1\nagent: commit-1 by itself",
		gitIn(t, r.remote.dir, "log", "--format=%s", r.remote.base+".."+res.Head), "attempt 2 builds on attempt 1's commit")
	require.Equal(t, "change of commit-1\nattempt 2", gitIn(t, r.remote.dir, "show", res.Head+":tasks/commit-1.txt"))
	r.verifyAudit()
}

// A review not decided in time fails its task with review_expired, once,
// with one DLQ entry, though two workers sweep.
func TestReviewExpires(t *testing.T) {
	t.Parallel()
	r := newReviewRig(t)
	policy := pipeline.ReviewPolicy{Mode: subjects.ReviewAfterJudge, ExpireAfter: 300 * time.Millisecond}
	runOwned(t, r.worker(2, policy))
	runOwned(t, r.worker(2, policy))
	after := r.submit(task("rvx", "edit-1"), task("rvx", "edit-2"))
	got := r.waitTerminal("rvx", after, 2)
	for _, id := range []string{"edit-1", "edit-2"} {
		require.Equal(t, subjects.EventTaskFailed, got[id].EventType, id)
		require.Equal(t, string(subjects.ReasonReviewExpired), got[id].Action, id)
	}
	var reasons []string
	for _, m := range r.dlq() {
		reasons = append(reasons, m.Header.Get(subjects.HeaderReason))
	}
	require.Equal(t, []string{"review_expired", "review_expired"}, reasons)
	failed := 0
	for _, ev := range r.events("rvx") {
		if ev.EventType == subjects.EventTaskFailed {
			failed++
		}
	}
	require.Equal(t, 2, failed, "each task fails once")
	reply := r.decide("rvx", "edit-1", subjects.ReviewApprove, "")
	require.Contains(t, reply.Error, "is failed, not awaiting_review")
	r.verifyAudit()
}

// Without workspaces too: a rejected last attempt fails with max_attempts,
// and cancelling a workflow ends its tasks awaiting review.
func TestReviewLastAttemptAndWorkflowCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(worker.Config{Concurrency: 2, Runners: runner.SimSet(runner.NewSim(runner.SimOptions{})),
		Pipeline: pipeline.Config{Review: pipeline.ReviewPolicy{Mode: subjects.ReviewInstead}}})
	r := &reviewRig{wsRig: &wsRig{bundle: b}}
	last := task("rvl", "T1")
	last.MaxAttempts = 1
	after := b.submit(last, task("rvc", "T2"))
	r.waitWaiting(2)

	reply := r.decide("rvl", "T1", subjects.ReviewReject, "not like this")
	require.Empty(t, reply.Error)
	require.Equal(t, subjects.StateFailed, reply.State)
	got := b.waitTerminal("rvl", after, 1)
	require.Equal(t, string(subjects.ReasonMaxAttempts), got["T1"].Action)
	require.Contains(t, got["T1"].Error, "not like this")

	code, _, errOut := b.drover("workflow", "cancel", "rvc", "--reason", "dropped")
	require.Equal(t, 0, code, errOut)
	got = b.waitTerminal("rvc", after, 1)
	require.Equal(t, subjects.EventTaskCancelled, got["T2"].EventType)
	require.Empty(t, r.waiting())
	r.verifyAudit()
}
