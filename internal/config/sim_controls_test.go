package config

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// TestConfigSimControlsOnlySteerSimRoles checks that a task's metadata.sim
// acts only on the roles that run on the sim: it cannot make an exec role
// fail, panic, hang, wait or change its verdict, while the same controls do
// steer the sim role of the same set.
func TestConfigSimControlsOnlySteerSimRoles(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`
roles:
  planner: {runner: sim}
  implementer: {runner: exec, exec: {argv: [sh, -c, 'cat >/dev/null; echo "{\"change\": \"real change\"}"']}}
  judge: {runner: exec, exec: {argv: [sh, -c, 'cat >/dev/null; echo "{\"verdict\": \"reject\", \"feedback\": \"real judge\"}"']}}
`))
	require.NoError(t, err)
	set, err := f.Runners(nil, runner.NewSim(runner.SimOptions{}))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, sim string
		simRole   func(t *testing.T, run func() (runner.Result, error))
	}{
		{"fail", `{"fail": {"role": "%s", "times": -1}}`, func(t *testing.T, run func() (runner.Result, error)) {
			_, err := run()
			require.ErrorContains(t, err, "planner failure on try 1")
		}},
		{"panic", `{"panic": "%s"}`, func(t *testing.T, run func() (runner.Result, error)) {
			require.PanicsWithValue(t, "sim: panic in planner", func() { _, _ = run() })
		}},
		{"hang", `{"hang": "%s"}`, func(t *testing.T, run func() (runner.Result, error)) {
			_, err := run()
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}},
		{"latency", `{"latency_ms": {"%s": 3600000}}`, func(t *testing.T, run func() (runner.Result, error)) {
			_, err := run()
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, role := range subjects.Roles {
				req := runner.Request{Role: role, Attempt: 1, Try: 1, Plan: json.RawMessage(`{"plan":"p"}`), Change: json.RawMessage(`{"change":"c"}`),
					Task: subjects.TaskRequest{ID: "T1", Workflow: "w", Scope: "s", Type: subjects.DefaultTaskType, MaxAttempts: 3,
						Metadata: map[string]json.RawMessage{"sim": json.RawMessage(fmt.Sprintf(tc.sim, role))}}}
				_, err := subjects.SimControlsOf(req.Task.Metadata)
				require.NoError(t, err)
				run := func() (runner.Result, error) {
					// Long enough for an exec child on a loaded machine, far
					// short of the hour of latency asked for.
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					if role == subjects.RolePlanner {
						ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
						defer cancel()
					}
					return set.For(role).Run(ctx, req)
				}
				if role == subjects.RolePlanner {
					tc.simRole(t, run)
					continue
				}
				res, err := run()
				require.NoError(t, err, "%s: metadata.sim steered a real role", role)
				want := map[subjects.Role]string{subjects.RoleImplementer: "real change", subjects.RoleJudge: "real judge"}[role]
				require.Contains(t, string(res.Output)+res.Reasoning, want, role)
			}
		})
	}
	// judge_rejects steers only a sim judge: the real judge's verdict stands.
	req := runner.Request{Role: subjects.RoleJudge, Attempt: 1, Try: 1, Change: json.RawMessage(`{"change":"c"}`),
		Task: subjects.TaskRequest{ID: "T1", Workflow: "w", Scope: "s", Metadata: map[string]json.RawMessage{"sim": json.RawMessage(`{"judge_rejects": 0}`)}}}
	res, err := set.Judge.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, subjects.VerdictReject, res.Action, "metadata.sim cannot make a real judge approve")
}
