package audit_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// vf is one step of a crafted audit record: an event of workflow "w" (or a
// DLQ entry, when dlq is set).
type vf struct {
	task   string
	att    int
	actor  subjects.Actor
	et     subjects.EventType
	n      uint64
	action string
	dlq    bool // a DLQ entry for task with reason action and request seq n
}

var (
	vfSys, vfPl, vfIm, vfJu = subjects.ActorSystem, subjects.Actor("planner"), subjects.Actor("implementer"), subjects.Actor("judge")
)

// Short forms of the steps of a crafted record.
func vAcc(task string) vf {
	return vf{task: task, att: 1, actor: vfSys, et: subjects.EventTaskAccepted}
}
func vPlan(task string) vf {
	return vf{task: task, att: 1, actor: vfPl, et: subjects.EventPlannerDecision}
}
func vImpl(task string, r int) vf {
	return vf{task: task, att: r, actor: vfIm, et: subjects.EventImplementerChange}
}
func vJudge(task string, r int, a string) vf {
	return vf{task: task, att: r, actor: vfJu, et: subjects.EventJudgeVerdict, action: a}
}
func vDone(task string, r int) vf {
	return vf{task: task, att: r, actor: vfSys, et: subjects.EventTaskCompleted}
}
func vFail(task string, r int, reason subjects.Reason) vf {
	return vf{task: task, att: r, actor: vfSys, et: subjects.EventTaskFailed, action: string(reason)}
}
func vRej(task string, seq uint64, reason subjects.Reason) vf {
	return vf{task: task, actor: vfSys, et: subjects.EventTaskRejected, n: seq, action: string(reason)}
}
func vRedrive(task string, dlqSeq uint64) vf {
	return vf{task: task, actor: subjects.ActorHuman, et: subjects.EventTaskRedriven, n: dlqSeq}
}
func vDLQ(task string, seq uint64, reason subjects.Reason) vf {
	return vf{task: task, n: seq, action: string(reason), dlq: true}
}

// vfProvision provisions a deployment on a fresh embedded server, with the
// shortest duplicate window, so a test can store an event ID twice.
func vfProvision(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, js := natstest.Connect(t, natstest.Server(t, natstest.Sync(time.Minute)).ClientURL())
	natstest.Provision(t, context.Background(), js, broker.Settings{Names: rdNames, DuplicateWindow: 100 * time.Millisecond})
	return js
}

// vfStore writes the steps in order and returns each step's audit sequence
// (0 for DLQ entries).
func vfStore(t *testing.T, js jetstream.JetStream, steps ...vf) []uint64 {
	t.Helper()
	ctx := context.Background()
	// Recent timestamps: a DLQ entry is only checked for while the DLQ can
	// still hold it (its max age, 30 days by default).
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	seqs := make([]uint64, len(steps))
	for i, s := range steps {
		wf := "w"
		if s.task == subjects.Reserved && (s.dlq || s.et == subjects.EventTaskRejected) {
			wf = subjects.Reserved
		}
		if s.dlq {
			_, err := js.PublishMsg(ctx, vfDLQMsg(s))
			require.NoError(t, err)
			continue
		}
		ev := rdEvent(wf, s.task, s.att, s.actor, s.et, s.n, t0.Add(time.Duration(i)*time.Second))
		ev.Action = s.action
		seqs[i] = vfPublish(t, js, &ev, ev.EventID)
	}
	return seqs
}

// vfDLQMsg is the DLQ entry of step s, a DLQ step.
func vfDLQMsg(s vf) *nats.Msg {
	wf := "w"
	if s.task == subjects.Reserved {
		wf = subjects.Reserved
	}
	msg := nats.NewMsg(rdNames.DLQSubject("default"))
	msg.Header.Set(subjects.HeaderReason, s.action)
	msg.Header.Set(subjects.HeaderWorkflow, subjects.Token(wf))
	msg.Header.Set(subjects.HeaderTask, s.task)
	msg.Header.Set(subjects.HeaderStreamSeq, strconv.FormatUint(s.n, 10))
	msg.Header.Set(subjects.HeaderMsgID, subjects.DLQMsgID("default", s.n))
	msg.Data = []byte(`{"id":"x"}`)
	return msg
}

// vfPublish stores ev with msgID as its Nats-Msg-Id, waiting out the
// duplicate window if the ID was stored just before.
func vfPublish(t *testing.T, js jetstream.JetStream, ev *subjects.AuditEvent, msgID string) uint64 {
	t.Helper()
	body, err := json.Marshal(ev)
	require.NoError(t, err)
	var seq uint64
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		msg := nats.NewMsg(rdNames.AuditSubject(ev.WorkflowID, ev.TaskID, ev.Actor, ev.EventType))
		msg.Header.Set(subjects.HeaderMsgID, msgID)
		msg.Data = body
		ack, err := js.PublishMsg(context.Background(), msg)
		if !assert.NoError(c, err) {
			return
		}
		seq = ack.Sequence
		assert.False(c, ack.Duplicate, "duplicate")
	}, 10*time.Second, 20*time.Millisecond, "the duplicate window did not pass")
	return seq
}

func vfVerify(t *testing.T, js jetstream.JetStream, opts audit.VerifyOptions) audit.VerifyReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := audit.Verify(ctx, js, rdNames, opts)
	require.NoError(t, err)
	require.Equal(t, rep.ViolationCount == 0, rep.OK())
	return rep
}

// vfClean is a workflow that breaks nothing: T1 completes in round 2 and is
// submitted again (rejected as a duplicate); T2 retries its implementer and
// fails after max_attempts; T3 still runs; an unreadable request is
// rejected; the workflow is paused and resumed.
func vfClean() []vf {
	return []vf{
		vAcc("T1"), vPlan("T1"), vAcc("T2"),
		{task: subjects.Reserved, actor: vfSys, et: subjects.EventWorkflowPaused, n: 3},
		vImpl("T1", 1), vPlan("T2"), vJudge("T1", 1, "reject"),
		{task: "T2", att: 1, actor: vfIm, et: subjects.EventTaskRetried, n: 1},
		vImpl("T1", 2), vImpl("T2", 1), vJudge("T1", 2, "approve"), vDone("T1", 2),
		{task: subjects.Reserved, actor: vfSys, et: subjects.EventWorkflowResumed, n: 4},
		vJudge("T2", 1, "reject"), vDLQ("T2", 2, subjects.ReasonMaxAttempts), vFail("T2", 1, subjects.ReasonMaxAttempts),
		vDLQ("_", 7, subjects.ReasonInvalidJSON), vRej("_", 7, subjects.ReasonInvalidJSON),
		vAcc("T3"), vPlan("T3"),
		vDLQ("T1", 9, subjects.ReasonDuplicateID), vRej("T1", 9, subjects.ReasonDuplicateID),
	}
}

func TestVerifyClean(t *testing.T) {
	t.Parallel()
	js := vfProvision(t)
	vfStore(t, js, vfClean()...)
	rep := vfVerify(t, js, audit.VerifyOptions{DLQ: true})
	require.True(t, rep.OK(), "violations: %v", rep.Violations)
	require.Nil(t, rep.First)
	require.Equal(t, uint64(19), rep.Events)
	require.Equal(t, uint64(2), rep.WorkflowEvents)
	require.Equal(t, []int{3, 1, 1, 0, 1, 2}, []int{rep.Tasks, rep.Completed, rep.Failed, rep.Cancelled, rep.Open, rep.Rejected})
	require.Equal(t, []string{"w/T3"}, rep.OpenTasks)
	require.Equal(t, 3, rep.DLQEntries)
	require.True(t, rep.SeqChecked)
	require.True(t, rep.DLQChecked)
	require.Equal(t, uint64(1), rep.FirstSeq)
	require.Equal(t, uint64(19), rep.LastSeq)
	require.Positive(t, rep.EventsPerSec)

	empty := vfVerify(t, vfProvision(t), audit.VerifyOptions{DLQ: true})
	require.True(t, empty.OK())
	require.Zero(t, empty.Events)
}

// TestVerifyViolations breaks one invariant per case and expects Verify to
// name it, at the right event, as the first violation.
func TestVerifyViolations(t *testing.T) {
	t.Parallel()
	happy := []vf{vAcc("T1"), vPlan("T1"), vImpl("T1", 1), vJudge("T1", 1, "approve"), vDone("T1", 1)}
	cases := []struct {
		name  string
		steps []vf
		bad   int // index of the offending step
		rule  string
		opts  audit.VerifyOptions
	}{
		{"two terminals", append(happy[:5:5], vFail("T1", 1, subjects.ReasonMaxDeliveries)), 5, audit.RuleTerminalTwice, audit.VerifyOptions{}},
		{"judge before implementer", []vf{vAcc("T1"), vPlan("T1"), vJudge("T1", 1, "approve"), vDone("T1", 1)}, 2, audit.RuleOrder, audit.VerifyOptions{}},
		{"implementer before planner", []vf{vAcc("T1"), vImpl("T1", 1)}, 1, audit.RuleOrder, audit.VerifyOptions{}},
		{"event after terminal", append(happy[:5:5], vImpl("T1", 2)), 5, audit.RuleAfterTerminal, audit.VerifyOptions{}},
		{"no task_accepted", []vf{vPlan("T1")}, 0, audit.RuleOrder, audit.VerifyOptions{}},
		{"round skipped after reject", []vf{vAcc("T1"), vPlan("T1"), vImpl("T1", 1), vJudge("T1", 1, "reject"), vImpl("T1", 3)}, 4, audit.RuleOrder, audit.VerifyOptions{}},
		{"completed without approval", []vf{vAcc("T1"), vPlan("T1"), vImpl("T1", 1), vJudge("T1", 1, "reject"), vDone("T1", 1)}, 4, audit.RuleOrder, audit.VerifyOptions{}},
		{"rejection without DLQ entry", append(happy[:5:5], vRej("T1", 42, subjects.ReasonDuplicateID)), 5, audit.RuleDLQMissing, audit.VerifyOptions{DLQ: true}},
		{"failure without DLQ entry", []vf{vAcc("T1"), vFail("T1", 1, subjects.ReasonRoleFailed)}, 1, audit.RuleDLQMissing, audit.VerifyOptions{DLQ: true}},
		{"DLQ entry of another reason", []vf{vDLQ("T1", 42, subjects.ReasonTooLarge), vRej("T1", 42, subjects.ReasonDuplicateID)}, 1, audit.RuleDLQMismatch, audit.VerifyOptions{DLQ: true}},
		{"redrive written by the system", append(happy[:5:5], vf{task: "T1", actor: vfSys, et: subjects.EventTaskRedriven, n: 3}), 5, audit.RuleSubject, audit.VerifyOptions{}},
		{"redrive without its /<n>", append(happy[:5:5], vf{task: "T1", actor: subjects.ActorHuman, et: subjects.EventTaskRedriven}), 5, audit.RuleEventID, audit.VerifyOptions{}},
		{"two DLQ entries", []vf{vDLQ("T1", 42, subjects.ReasonDuplicateID), vDLQ("T1", 42, subjects.ReasonDuplicateID), vRej("T1", 42, subjects.ReasonDuplicateID)}, 2, audit.RuleDLQDuplicate, audit.VerifyOptions{DLQ: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			js := vfProvision(t)
			if tc.rule == audit.RuleDLQDuplicate {
				// Store the second entry after the DLQ's duplicate window.
				vfStore(t, js, tc.steps[0])
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					ctx := context.Background()
					_, err := js.PublishMsg(ctx, vfDLQMsg(tc.steps[1]))
					if !assert.NoError(c, err) {
						return
					}
					s, err := js.Stream(ctx, rdNames.DLQStream())
					if assert.NoError(c, err) {
						assert.EqualValues(c, 2, s.CachedInfo().State.Msgs)
					}
				}, 10*time.Second, 20*time.Millisecond)
				tc.steps = tc.steps[2:]
				tc.bad -= 2
			}
			seqs := vfStore(t, js, tc.steps...)
			rep := vfVerify(t, js, tc.opts)
			require.False(t, rep.OK())
			require.NotNil(t, rep.First)
			require.Equal(t, tc.rule, rep.First.Rule, "first: %v", rep.First)
			require.Equal(t, seqs[tc.bad], rep.First.Seq, "first: %v", rep.First)
			require.NotEmpty(t, rep.First.Detail)
			require.Equal(t, rep.Violations[0], *rep.First)
		})
	}
}

// TestVerifyRedriven checks that task_redriven events, written on the
// original request's task after its terminal event, are neither a step nor
// a second terminal: the failed task stays failed, once.
func TestVerifyRedriven(t *testing.T) {
	t.Parallel()
	js := vfProvision(t)
	steps := append(vfClean(),
		vRedrive("T2", 2),              // after T2's task_failed
		vRedrive("T1", 9),              // a duplicate_id entry of completed T1
		vRedrive(subjects.Reserved, 7), // a rejection that named no task
		vAcc("T4"), vRedrive("T4", 11), // an open task (a foreign event for its worker)
		vPlan("T4"),
	)
	vfStore(t, js, steps...)
	rep := vfVerify(t, js, audit.VerifyOptions{DLQ: true})
	require.True(t, rep.OK(), "violations: %v", rep.Violations)
	require.Equal(t, 4, rep.Redriven)
	require.Equal(t, []int{4, 1, 1, 0, 2, 2}, []int{rep.Tasks, rep.Completed, rep.Failed, rep.Cancelled, rep.Open, rep.Rejected})
}

func TestVerifyOpenTaskIsNoViolation(t *testing.T) {
	t.Parallel()
	js := vfProvision(t)
	vfStore(t, js, vAcc("T1"), vPlan("T1"), vImpl("T1", 1))
	rep := vfVerify(t, js, audit.VerifyOptions{DLQ: true})
	require.True(t, rep.OK(), "violations: %v", rep.Violations)
	require.Equal(t, 1, rep.Open)
	require.Equal(t, 1, rep.Tasks)
	require.Equal(t, []string{"w/T1"}, rep.OpenTasks)
}
