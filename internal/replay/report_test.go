package replay

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestCompareJudgeVerdicts(t *testing.T) {
	t.Parallel()
	verdicts := func(actions ...string) *Task {
		t := &Task{Outputs: map[Step]Output{{subjects.RolePlanner, 1}: {Output: json.RawMessage(`{"plan":"p"}`), Action: "plan"}}}
		for i, a := range actions {
			t.Outputs[Step{subjects.RoleJudge, i + 1}] = Output{Output: json.RawMessage(`{"verdict":"` + a + `"}`), Action: a}
		}
		outcome := subjects.EventTaskCompleted
		if actions[len(actions)-1] == subjects.VerdictReject {
			outcome = subjects.EventTaskFailed
		}
		t.Outcome = Outcome{Type: outcome, Attempts: len(actions)}
		return t
	}
	old := &Record{Workflow: "w", Tasks: map[string]*Task{
		"same":   verdicts("approve"),
		"flip":   verdicts("approve"),
		"unflip": verdicts("reject", "approve"),
	}}
	again := &Record{Workflow: "w2", Tasks: map[string]*Task{
		"same":   verdicts("approve"),
		"flip":   verdicts("reject"),
		"unflip": verdicts("approve"),
	}}
	rep := compare(old, again, []string{"same", "flip", "unflip"}, subjects.RoleJudge)
	s := rep.Summary
	assert.Equal(t, []string{"flip"}, s.ApproveToReject)
	assert.Equal(t, []string{"unflip"}, s.RejectToApprove)
	assert.Equal(t, 3, s.Compared)
	assert.Equal(t, 1, s.Agreed)
	assert.InDelta(t, 1.0/3, s.AgreementRate, 1e-12)
	assert.Equal(t, []string{"flip", "unflip"}, s.Changed)
	assert.Equal(t, 1, s.Matching)
	by := map[string]TaskReport{}
	for _, tr := range rep.Tasks {
		by[tr.Task] = tr
	}
	assert.Equal(t, "reject,approve", by["unflip"].OldDecision)
	assert.Equal(t, "approve", by["unflip"].NewDecision)
	assert.False(t, by["unflip"].AttemptsMatch)

	var buf bytes.Buffer
	require.NoError(t, rep.WriteTable(&buf))
	assert.Contains(t, buf.String(), "approve -> reject: flip")
	assert.Contains(t, buf.String(), "verdicts compared: 3, agreed: 1 (33.3%)")
}

func TestComparePlans(t *testing.T) {
	t.Parallel()
	plan := func(p string) *Task {
		return &Task{Outputs: map[Step]Output{{subjects.RolePlanner, 1}: {Output: json.RawMessage(`{"plan":"` + p + `"}`), Action: "plan"}}}
	}
	rep := compare(&Record{Tasks: map[string]*Task{"a": plan("x"), "b": plan("y")}},
		&Record{Tasks: map[string]*Task{"a": plan("x"), "b": plan("z")}}, []string{"a", "b"}, subjects.RolePlanner)
	assert.Equal(t, []string{"b"}, rep.Summary.Changed)
	assert.Zero(t, rep.Summary.Compared)
	assert.JSONEq(t, `{"plan":"z"}`, string(rep.Tasks[1].NewOutput))
}
