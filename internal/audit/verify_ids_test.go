package audit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

func TestVerifyDuplicateEventID(t *testing.T) {
	t.Parallel()
	js := vfProvision(t)
	seqs := vfStore(t, js, vAcc("T1"), vPlan("T1"))
	// The same event again, after the duplicate window: what a redelivery
	// long after the window would store if the fence did not hold.
	ev := rdEvent("w", "T1", 1, vfPl, subjects.EventPlannerDecision, 0, time.Now())
	dup := vfPublish(t, js, &ev, ev.EventID)
	rep := vfVerify(t, js, audit.VerifyOptions{})
	require.Equal(t, 1, rep.ViolationCount, "the duplicate is not also an order violation: %v", rep.Violations)
	require.Equal(t, audit.RuleDuplicateID, rep.First.Rule)
	require.Equal(t, dup, rep.First.Seq)
	require.Equal(t, ev.EventID, rep.First.EventID)
	require.Contains(t, rep.First.Detail, "seq 2")
	require.Equal(t, uint64(2), seqs[1])
}

func TestVerifyEventIDs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		msgID func(ev subjects.AuditEvent) string
		body  func(ev *subjects.AuditEvent)
		rule  string
	}{
		{"header differs from body", func(ev subjects.AuditEvent) string { return ev.EventID + "/7" }, nil, audit.RuleEventID},
		{"body differs from header", func(ev subjects.AuditEvent) string { return ev.EventID }, func(ev *subjects.AuditEvent) { ev.EventID = "w/T9/1/planner/planner_decision" }, audit.RuleEventIDBody},
		{"no header", func(subjects.AuditEvent) string { return "" }, nil, audit.RuleEventID},
		{"wrong attempt", func(subjects.AuditEvent) string { return "w/T1/2/planner/planner_decision" }, nil, audit.RuleEventID},
		{"another task", func(subjects.AuditEvent) string { return "w/T2/1/planner/planner_decision" }, nil, audit.RuleEventID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			js := vfProvision(t)
			vfStore(t, js, vAcc("T1"))
			ev := rdEvent("w", "T1", 1, vfPl, subjects.EventPlannerDecision, 0, time.Now())
			msgID := tc.msgID(ev)
			if tc.body != nil {
				tc.body(&ev)
			}
			seq := vfPublish(t, js, &ev, msgID)
			rep := vfVerify(t, js, audit.VerifyOptions{})
			require.False(t, rep.OK())
			require.Equal(t, tc.rule, rep.First.Rule, "first: %v", rep.First)
			require.Equal(t, seq, rep.First.Seq)
		})
	}
}

// TestVerifyMissingSequence removes an event from a stream that, unlike
// the contract's, allows it: Verify must notice the gap.
func TestVerifyMissingSequence(t *testing.T) {
	t.Parallel()
	_, js := natstest.Connect(t, natstest.Server(t, rdSync).ClientURL())
	ctx := context.Background()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: rdNames.AuditStream(), Subjects: []string{rdNames.AuditWildcard()}})
	require.NoError(t, err)
	for _, s := range []vf{vAcc("T1"), vPlan("T1"), vImpl("T1", 1), vJudge("T1", 1, "approve"), vDone("T1", 1)} {
		ev := rdEvent("w", s.task, s.att, s.actor, s.et, s.n, time.Now())
		ev.Action = s.action
		rdPublish(t, js, ev)
	}
	require.True(t, vfVerify(t, js, audit.VerifyOptions{}).OK())

	require.NoError(t, stream.DeleteMsg(ctx, 3))
	rep := vfVerify(t, js, audit.VerifyOptions{})
	require.False(t, rep.OK())
	require.Equal(t, audit.RuleMissingSeq, rep.First.Rule)
	require.Equal(t, uint64(4), rep.First.Seq)
	require.Contains(t, rep.First.Detail, "3 to 3")
	require.Equal(t, audit.RuleOrder, rep.Violations[1].Rule, "the judge now has no implementer before it")

	require.NoError(t, stream.DeleteMsg(ctx, 1))
	rep = vfVerify(t, js, audit.VerifyOptions{})
	require.Equal(t, audit.RuleMissingSeq, rep.First.Rule)
	require.Equal(t, uint64(2), rep.First.Seq, "a missing head is a gap too")

	require.NoError(t, stream.DeleteMsg(ctx, 5))
	rep = vfVerify(t, js, audit.VerifyOptions{})
	require.Equal(t, audit.RuleMissingSeq, rep.Violations[len(rep.Violations)-1].Rule)
	require.Equal(t, uint64(5), rep.Violations[len(rep.Violations)-1].Seq, "a missing tail is a gap too")

	filtered := vfVerify(t, js, audit.VerifyOptions{Workflow: "w"})
	require.False(t, filtered.SeqChecked)
	for _, v := range filtered.Violations {
		require.NotEqual(t, audit.RuleMissingSeq, v.Rule, "a filtered check skips sequence gaps")
	}

	require.NoError(t, stream.DeleteMsg(ctx, 2))
	require.NoError(t, stream.DeleteMsg(ctx, 4))
	rep = vfVerify(t, js, audit.VerifyOptions{})
	require.Zero(t, rep.Events)
	require.Equal(t, audit.RuleMissingSeq, rep.First.Rule, "an emptied stream is one gap")
	require.Contains(t, rep.First.Detail, "1 to 5")
}

// TestVerifyWorkflow checks one workflow only: another workflow's broken
// record does not count.
func TestVerifyWorkflow(t *testing.T) {
	t.Parallel()
	js := vfProvision(t)
	vfStore(t, js, vfClean()...)
	bad := rdEvent("other", "T1", 1, vfJu, subjects.EventJudgeVerdict, 0, time.Now())
	bad.Action = subjects.VerdictApprove
	rdPublish(t, js, bad)

	all := vfVerify(t, js, audit.VerifyOptions{DLQ: true})
	require.False(t, all.OK())
	require.Equal(t, "other/T1/1/judge/judge_verdict", all.First.EventID)

	one := vfVerify(t, js, audit.VerifyOptions{Workflow: "w", DLQ: true})
	require.True(t, one.OK(), "violations: %v", one.Violations)
	require.Equal(t, "drover.audit.w.>", one.Filter)
	require.Equal(t, uint64(18), one.Events, "the unreadable request's rejection is on workflow _")
	require.Equal(t, 3, one.Tasks)
	require.False(t, one.SeqChecked)

	none := vfVerify(t, js, audit.VerifyOptions{Workflow: "nothing-here"})
	require.True(t, none.OK())
	require.Zero(t, none.Events)

	_, err := audit.Verify(context.Background(), js, rdNames, audit.VerifyOptions{Workflow: "a b"})
	require.ErrorContains(t, err, "workflow")
}

// A foreign writer's event whose body's event_id has the header's bytes
// but decodes to another ID (an escape: the header's `w\n` is a backslash
// and an n, the body's a newline) is decoded and reported.
func TestVerifyEventIDBodyEscaped(t *testing.T) {
	t.Parallel()
	js := vfProvision(t)
	const wf = `w\n`
	ev := rdEvent("w\n", "T1", 1, vfSys, subjects.EventTaskAccepted, 0, time.Now())
	ev.EventID = "w\n/T1/1/system/task_accepted"
	body, err := json.Marshal(ev)
	require.NoError(t, err)
	require.Contains(t, string(body), `{"event_id":"`+wf+`/T1/1/system/task_accepted"`, "the body's bytes are the header's")
	msg := nats.NewMsg("drover.audit." + wf + ".T1.system.task_accepted")
	msg.Header.Set(subjects.HeaderMsgID, wf+"/T1/1/system/task_accepted")
	msg.Data = body
	_, err = js.PublishMsg(context.Background(), msg)
	require.NoError(t, err)

	rep := vfVerify(t, js, audit.VerifyOptions{})
	rules := make([]string, 0, len(rep.Violations))
	for _, v := range rep.Violations {
		rules = append(rules, v.Rule)
	}
	require.Contains(t, rules, audit.RuleEventIDBody, "violations: %v", rep.Violations)
}
