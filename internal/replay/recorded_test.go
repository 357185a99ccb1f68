package replay

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

func TestRecordedRunner(t *testing.T) {
	t.Parallel()
	plan, change1, change2 := json.RawMessage(`{"plan":"p"}`), json.RawMessage(`{"change":"1"}`), json.RawMessage(`{"change":"2"}`)
	ok := &Task{
		Request: subjects.TaskRequest{ID: "ok"},
		Outputs: map[Step]Output{
			{subjects.RolePlanner, 1}:     {Output: plan, Action: "plan"},
			{subjects.RoleImplementer, 1}: {Output: change1, Action: "change"},
			{subjects.RoleJudge, 1}:       {Output: json.RawMessage(`{"verdict":"reject"}`), Action: "reject", Reasoning: "add a test"},
			{subjects.RoleImplementer, 2}: {Output: change2, Action: "change", Feedback: "add a test"},
			{subjects.RoleJudge, 2}:       {Output: json.RawMessage(`{"verdict":"approve"}`), Action: "approve"},
		},
		Outcome: Outcome{Type: subjects.EventTaskCompleted, Attempts: 2},
	}
	failed := func(id, reason string) *Task {
		return &Task{Request: subjects.TaskRequest{ID: id},
			Outputs: map[Step]Output{{subjects.RolePlanner, 1}: {Output: plan, Action: "plan"}},
			Outcome: Outcome{Type: subjects.EventTaskFailed, Reason: reason, Attempts: 1, Error: "boom"}}
	}
	rec := &Record{Workflow: "w", Tasks: map[string]*Task{"ok": ok,
		"perm": failed("perm", string(subjects.ReasonRoleFailed)), "flaky": failed("flaky", string(subjects.ReasonMaxDeliveries))}}
	req := func(task string, role subjects.Role, attempt int) runner.Request {
		return runner.Request{Role: role, Task: subjects.TaskRequest{ID: task, Workflow: "w2"}, Attempt: attempt, Plan: plan}
	}
	with := func(r runner.Request, f func(*runner.Request)) runner.Request { f(&r); return r }
	for _, tc := range []struct {
		name      string
		req       runner.Request
		action    string
		diverged  bool
		permanent bool
	}{
		{"the planner", req("ok", subjects.RolePlanner, 1), "plan", false, false},
		{"round 2's implementer with the recorded feedback", with(req("ok", subjects.RoleImplementer, 2), func(r *runner.Request) { r.Feedback = "add a test" }), "change", false, false},
		{"the judge of the recorded change, plan re-indented", with(req("ok", subjects.RoleJudge, 2), func(r *runner.Request) {
			r.Change, r.Plan = change2, json.RawMessage("{ \"plan\": \"p\" }")
		}), "approve", false, false},
		{"another plan", with(req("ok", subjects.RoleImplementer, 1), func(r *runner.Request) { r.Plan = json.RawMessage(`{"plan":"q"}`) }), "", true, true},
		{"other feedback", with(req("ok", subjects.RoleImplementer, 2), func(r *runner.Request) { r.Feedback = "no" }), "", true, true},
		{"another change", with(req("ok", subjects.RoleJudge, 1), func(r *runner.Request) { r.Change = change2 }), "", true, true},
		{"a round never recorded", req("ok", subjects.RoleImplementer, 3), "", true, true},
		{"a task never recorded", req("nope", subjects.RolePlanner, 1), "", true, true},
		{"the step that failed for good fails again, for good", req("perm", subjects.RoleImplementer, 1), "", false, true},
		{"the step that ran out of deliveries fails again, retried", req("flaky", subjects.RoleImplementer, 1), "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRecorded(rec)
			res, err := r.Run(context.Background(), tc.req)
			if tc.action != "" {
				require.NoError(t, err)
				assert.Equal(t, tc.action, res.Action)
				assert.EqualValues(t, 1, r.Served())
				assert.Equal(t, "w", res.Metadata["recorded_from"])
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.diverged, errors.Is(err, ErrDiverged), err.Error())
			assert.Equal(t, tc.permanent, errors.Is(err, runner.ErrPermanent), err.Error())
			assert.Equal(t, tc.diverged, r.Diverged() == 1)
		})
	}
}

func TestLiveRunnerSeesNoMarkers(t *testing.T) {
	t.Parallel()
	var seen subjects.TaskRequest
	live := NewLive(runner.Func{ID: "x", F: func(_ context.Context, req runner.Request) (runner.Result, error) {
		seen = req.Task
		return runner.Result{}, nil
	}})
	req := marked(subjects.TaskRequest{ID: "T", Workflow: "w", Metadata: map[string]json.RawMessage{"team": json.RawMessage(`"a"`)}},
		"w2", map[string]string{MetaCounterfactualOf: "w", MetaCounterfactualRole: "judge"})
	assert.Equal(t, "w2", req.Workflow)
	assert.JSONEq(t, `"w"`, string(req.Metadata[MetaCounterfactualOf]))
	_, err := live.Run(context.Background(), runner.Request{Task: req})
	require.NoError(t, err)
	assert.Equal(t, map[string]json.RawMessage{"team": json.RawMessage(`"a"`)}, seen.Metadata)
	assert.EqualValues(t, 1, live.Calls())
}
