package tests

import (
	"bufio"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/dlq"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// dlqFixture runs one task that fails (max_attempts: the judge rejects its
// only attempt), one that completes and one request that is not JSON, and
// returns the sim and the DLQ entries by reason.
func dlqFixture(t *testing.T, b *bundle) (*runner.Sim, map[subjects.Reason]dlq.Entry) {
	t.Helper()
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	fail := withSim(task("wf-dlq", "fail.1"), `{"judge_rejects": 1}`)
	fail.MaxAttempts = 1
	after := b.submit(fail, task("wf-dlq", "ok"))
	got := b.waitTerminal("wf-dlq", after, 2)
	require.Equal(t, subjects.EventTaskFailed, got["fail.1"].EventType)
	require.Equal(t, subjects.EventTaskCompleted, got["ok"].EventType)

	b.publishRaw([]byte(`{"workflow":"wf-dlq","id":"bad",`))
	rej := b.waitTerminal(subjects.Reserved, after, 1)
	require.Equal(t, subjects.EventTaskRejected, rej[subjects.Reserved].EventType)

	byReason := map[subjects.Reason]dlq.Entry{}
	require.NoError(t, dlq.List(t.Context(), b.js, b.names, dlq.Filter{}, func(e dlq.Entry) error {
		require.NotContains(t, byReason, subjects.Reason(e.Reason))
		byReason[subjects.Reason(e.Reason)] = e
		return nil
	}))
	require.Len(t, byReason, 2)
	return sim, byReason
}

func TestDLQListGetAndRedrive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim, entries := dlqFixture(t, b)
	ctx := t.Context()

	failed := entries[subjects.ReasonMaxAttempts]
	require.Equal(t, "wf-dlq", failed.Workflow)
	require.Equal(t, "fail.1", failed.Task)
	require.Equal(t, "default", failed.Queue)
	require.Equal(t, 1, failed.Deliveries)
	require.NotZero(t, failed.StreamSeq)
	bad := entries[subjects.ReasonInvalidJSON]
	require.Empty(t, bad.Workflow, "unreadable IDs are empty")
	require.Empty(t, bad.Task)
	require.Equal(t, `{"workflow":"wf-dlq","id":"bad",`, string(bad.Body))

	var only []uint64
	require.NoError(t, dlq.List(ctx, b.js, b.names, dlq.Filter{Workflow: "wf-dlq"}, func(e dlq.Entry) error {
		only = append(only, e.Seq)
		return nil
	}))
	require.Equal(t, []uint64{failed.Seq}, only)
	got, err := dlq.Get(ctx, b.js, b.names, bad.Seq)
	require.NoError(t, err)
	require.Equal(t, bad, got)

	// A request that was rejected for its content is refused, with nothing
	// submitted: it would only be rejected again.
	subs, err := dlq.Redrive(ctx, b.js, b.names, []dlq.Entry{failed, bad}, dlq.RedriveOptions{Actor: "test:dlq"})
	require.ErrorIs(t, err, dlq.ErrNotRedrivable)
	require.ErrorContains(t, err, "dlq entry "+strconv.FormatUint(bad.Seq, 10)+": cannot be redriven: the request was rejected as invalid_json")
	require.Empty(t, subs)

	// The failed task, redriven unchanged, fails the same way, and every
	// role is served from the cache: no runner call at all.
	calls, planner := sim.TotalCalls(), sim.Calls(subjects.RolePlanner)
	after := b.submit()
	subs, err = dlq.Redrive(ctx, b.js, b.names, []dlq.Entry{failed}, dlq.RedriveOptions{Actor: "test:dlq"})
	require.NoError(t, err)
	require.Len(t, subs, 1)
	require.Equal(t, "wf-dlq-redrive-1", subs[0].Workflow)
	require.Equal(t, "fail.1", subs[0].Task)
	require.False(t, subs[0].Duplicate)
	ev := b.waitTerminal("wf-dlq-redrive-1", after, 1)["fail.1"]
	require.Equal(t, subjects.EventTaskFailed, ev.EventType)
	require.Equal(t, string(subjects.ReasonMaxAttempts), ev.Action)
	require.Equal(t, planner, sim.Calls(subjects.RolePlanner), "no new planner call")
	require.Equal(t, calls, sim.TotalCalls(), "no new runner call")
	roles := 0
	for _, e := range b.events("wf-dlq-redrive-1") {
		if e.Actor != subjects.ActorSystem {
			roles++
			require.True(t, e.Cached, e.EventID)
		}
	}
	require.Equal(t, 3, roles)

	// The original entry stays; the redriven request has its own.
	_, err = dlq.Get(ctx, b.js, b.names, failed.Seq)
	require.NoError(t, err)
	var redriven []dlq.Entry
	require.NoError(t, dlq.List(ctx, b.js, b.names, dlq.Filter{Reason: "max_attempts"}, func(e dlq.Entry) error {
		redriven = append(redriven, e)
		return nil
	}))
	require.Len(t, redriven, 2)
	require.Equal(t, failed.Seq, redriven[0].Seq)
	require.Equal(t, "wf-dlq-redrive-1/fail.1", redriven[1].Ref())

	// Redriving the redrive counts on from the original workflow.
	after = b.submit()
	subs, err = dlq.Redrive(ctx, b.js, b.names, redriven[1:], dlq.RedriveOptions{Actor: "test:dlq"})
	require.NoError(t, err)
	require.Equal(t, "wf-dlq-redrive-2", subs[0].Workflow)
	b.waitTerminal("wf-dlq-redrive-2", after, 1)
	require.Equal(t, calls, sim.TotalCalls())
}

func TestDLQCommandLine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, entries := dlqFixture(t, b)
	failed, bad := entries[subjects.ReasonMaxAttempts], entries[subjects.ReasonInvalidJSON]

	code, out, errOut := b.drover("dlq", "ls", "--json")
	require.Equal(t, 0, code, errOut)
	var views []dlq.View
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var v dlq.View
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v), sc.Text())
		views = append(views, v)
	}
	require.Len(t, views, 2)
	byReason := map[string]dlq.View{views[0].Reason: views[0], views[1].Reason: views[1]}
	require.Equal(t, failed.Seq, byReason["max_attempts"].Seq)
	require.Equal(t, "wf-dlq", byReason["max_attempts"].Workflow)
	require.Equal(t, "fail.1", byReason["max_attempts"].Task)
	require.Equal(t, bad.Seq, byReason["invalid_json"].Seq)

	code, out, errOut = b.drover("dlq", "ls", "--reason", "max_attempts")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "WORKFLOW/TASK")
	require.Contains(t, out, "wf-dlq/fail.1")
	require.NotContains(t, out, "invalid_json")

	code, _, errOut = b.drover("dlq", "ls", "--reason", "bogus")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `--reason: reason "bogus" is not a DLQ reason; want one of invalid_json`)

	code, out, errOut = b.drover("dlq", "show", strconv.FormatUint(failed.Seq, 10))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Drover-Reason: max_attempts")
	require.Contains(t, out, "Drover-Workflow: wf-dlq")
	require.Contains(t, out, `"id": "fail.1"`, "the body is pretty-printed")
	code, out, errOut = b.drover("dlq", "show", strconv.FormatUint(bad.Seq, 10))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, strconv.Quote(string(bad.Body)), "a body that is not JSON is quoted")

	code, _, errOut = b.drover("dlq", "redrive", strconv.FormatUint(bad.Seq, 10))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "cannot be redriven: the request was rejected as invalid_json")

	code, out, errOut = b.drover("dlq", "redrive", "--all", "--dry-run")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "skipping dlq entry "+strconv.FormatUint(bad.Seq, 10))
	require.Contains(t, out, "as wf-dlq-redrive-1/fail.1 on queue default")

	code, out, errOut = b.drover("dlq", "redrive", "--all", "--to-workflow", "wf-fixed", "--wait")
	require.Equal(t, 1, code, "the redriven task fails again: %s", errOut)
	require.Contains(t, errOut, "as wf-fixed/fail.1 on drover.tasks.default")
	var fin struct{ Workflow, Task, Outcome, Reason string }
	require.NoError(t, json.Unmarshal([]byte(out), &fin), out)
	require.Equal(t, "wf-fixed", fin.Workflow)
	require.Equal(t, "failed", fin.Outcome)
	require.Equal(t, "max_attempts", fin.Reason)

	// The redrive is recorded on the original task, by the CLI's user; a
	// repeated redrive of the entry (--actor names another person) records
	// nothing more, and the record verifies.
	seq := strconv.FormatUint(failed.Seq, 10)
	code, _, errOut = b.drover("dlq", "redrive", seq, "--to-workflow", "wf-fixed", "--actor", "ops:carol")
	require.Equal(t, 0, code, errOut)
	var redrives []subjects.AuditEvent
	for _, e := range b.events("wf-dlq") {
		if e.EventType == subjects.EventTaskRedriven {
			redrives = append(redrives, e)
		}
	}
	require.Len(t, redrives, 1)
	ev := redrives[0]
	require.Equal(t, []any{"fail.1", subjects.ActorHuman, 0, "wf-dlq/fail=2E1/0/human/task_redriven/" + seq},
		[]any{ev.TaskID, ev.Actor, ev.Attempt, ev.EventID})
	var md struct {
		Actor, Reason string
		NewWorkflow   string `json:"new_workflow"`
		DLQSeq        uint64 `json:"dlq_seq"`
	}
	require.NoError(t, json.Unmarshal(ev.Metadata, &md))
	require.Regexp(t, `^cli:[^@]+@.+$`, md.Actor)
	require.Equal(t, failed.Seq, md.DLQSeq)
	require.Equal(t, "max_attempts", md.Reason)
	require.Equal(t, "wf-fixed", md.NewWorkflow)
	code, out, errOut = b.drover("audit", "--actor", "human", "--workflow", "wf-dlq")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "task_redriven")
	code, out, errOut = b.drover("audit", "verify")
	require.Equal(t, 0, code, "audit verify: %s%s", out, errOut)

	code, _, errOut = b.drover("dlq", "redrive", seq, "--actor", "bad\nactor")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--actor: dlq: redrive: bad actor")

	code, _, errOut = b.drover("dlq", "redrive", "--reason", "max_attempts", "1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--queue, --reason and --workflow select entries for --all")
}
