package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

func TestSimIdentity(t *testing.T) {
	t.Parallel()
	require.Equal(t, "sim/v1", NewSim(SimOptions{}).Identity())
}

func TestSimDeterministic(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	ctx := context.Background()
	for _, role := range subjects.Roles {
		t.Run(string(role), func(t *testing.T) {
			t.Parallel()
			req := simReq(t, role, "")
			req.Plan = json.RawMessage(`{"plan":"p"}`)
			req.Change = json.RawMessage(`{"change":"c"}`)
			a, err := s.Run(ctx, req)
			require.NoError(t, err)
			b, err := s.Run(ctx, req)
			require.NoError(t, err)
			require.Equal(t, a, b)
			require.True(t, json.Valid(a.Output))

			other := req
			other.Try = 7
			other.Task.Workflow = "another-workflow"
			c, err := s.Run(ctx, other)
			require.NoError(t, err)
			require.Equal(t, string(a.Output), string(c.Output))
			require.Equal(t, a, c)
		})
	}
}

func TestSimFeedbackChangesImplementerOutput(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	req := simReq(t, subjects.RoleImplementer, "")
	a, err := s.Run(context.Background(), req)
	require.NoError(t, err)
	req.Feedback = "attempt 1 rejected: tests missing"
	b, err := s.Run(context.Background(), req)
	require.NoError(t, err)
	require.NotEqual(t, string(a.Output), string(b.Output))
	require.Equal(t, ActionChange, b.Action)

	var out struct {
		Change    string `json:"change"`
		Attempt   int    `json:"attempt"`
		Addresses string `json:"addresses"`
	}
	require.NoError(t, json.Unmarshal(b.Output, &out))
	require.Equal(t, 1, out.Attempt)
	require.Equal(t, req.Feedback, out.Addresses)
	require.NotEmpty(t, out.Change)
}

func TestSimPlannerOutput(t *testing.T) {
	t.Parallel()
	res, err := NewSim(SimOptions{}).Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	require.NoError(t, err)
	require.Equal(t, ActionPlan, res.Action)
	var out struct {
		Plan  string   `json:"plan"`
		Steps []string `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(res.Output, &out))
	require.Contains(t, out.Plan, "Implement the audit logger")
	require.NotEmpty(t, out.Steps)
}

func TestSimJudgeRejects(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	req := simReq(t, subjects.RoleJudge, `{"judge_rejects": 2}`)
	for attempt, want := range map[int]string{1: "reject", 2: "reject", 3: "approve", 4: "approve"} {
		req.Attempt = attempt
		res, err := s.Run(context.Background(), req)
		require.NoError(t, err)
		require.Equal(t, want, res.Action, "attempt %d", attempt)
		var out struct{ Verdict, Feedback string }
		require.NoError(t, json.Unmarshal(res.Output, &out))
		require.Equal(t, want, out.Verdict)
		require.Equal(t, out.Feedback, res.Reasoning)
		if want == "reject" {
			require.Equal(t, fmt.Sprintf("attempt %d rejected: Audit log persists across restarts not yet shown", attempt), res.Reasoning)
		}
	}
}

func TestSimFailTimes(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	req := simReq(t, subjects.RoleImplementer, `{"fail": {"role": "implementer", "times": 2}}`)
	for try := 1; try <= 3; try++ {
		req.Try = try
		_, err := s.Run(context.Background(), req)
		if try <= 2 {
			require.EqualError(t, err, fmt.Sprintf("sim: implementer failure on try %d", try))
			require.NotErrorIs(t, err, ErrPermanent)
		} else {
			require.NoError(t, err)
		}
	}
	// Another role is not affected.
	_, err := s.Run(context.Background(), simReq(t, subjects.RoleJudge, `{"fail": {"role": "implementer", "times": 2}}`))
	require.NoError(t, err)
}

func TestSimFailAlways(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	req := simReq(t, subjects.RoleJudge, `{"fail": {"role": "judge", "times": -1}}`)
	for try := 1; try <= 20; try++ {
		req.Try = try
		_, err := s.Run(context.Background(), req)
		require.Error(t, err)
	}
}

func TestSimBadControlsArePermanent(t *testing.T) {
	t.Parallel()
	_, err := NewSim(SimOptions{}).Run(context.Background(), simReq(t, subjects.RolePlanner, `{"judge_rejects": "two"}`))
	require.ErrorIs(t, err, ErrPermanent)
}

func TestSimUnknownRoleIsPermanent(t *testing.T) {
	t.Parallel()
	_, err := NewSim(SimOptions{}).Run(context.Background(), simReq(t, "reviewer", ""))
	require.ErrorIs(t, err, ErrPermanent)
}

func TestSimPanics(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	require.PanicsWithValue(t, "sim: panic in judge", func() {
		_, _ = s.Run(context.Background(), simReq(t, subjects.RoleJudge, `{"panic": "judge"}`))
	})
	require.Zero(t, s.InFlight(), "in-flight gauge must drop on panic")
	require.EqualValues(t, 1, s.Calls(subjects.RoleJudge))
}

func TestSimLatencyCancelled(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.onStart = func(Request) { cancel() } // cancel while the call is running
	_, err := s.Run(ctx, simReq(t, subjects.RolePlanner, `{"latency_ms": {"planner": 3600000}}`))
	require.ErrorIs(t, err, context.Canceled)
}

func TestSimHangUntilCancelled(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	s.onStart = func(Request) { cancel() }
	_, err := s.Run(ctx, simReq(t, subjects.RoleImplementer, `{"hang": "implementer"}`))
	require.ErrorIs(t, err, context.Canceled)
}

func TestSimCounting(t *testing.T) {
	t.Parallel()
	const n = 8
	s := NewSim(SimOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, n)
	s.onStart = func(Request) { started <- struct{}{} }

	var wg sync.WaitGroup
	errs := make(chan error, n)
	hang := simReq(t, subjects.RoleImplementer, `{"hang": "implementer"}`)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Run(ctx, hang)
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		natstest.Recv(t, started, 30*time.Second)
	}
	require.EqualValues(t, n, s.InFlight())
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.ErrorIs(t, err, context.Canceled, "got %v", err)
	}

	s.onStart = nil
	_, err := s.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	require.NoError(t, err)
	_, err = s.Run(context.Background(), simReq(t, subjects.RoleJudge, `{"fail": {"role": "judge", "times": -1}}`))
	require.Error(t, err)

	require.EqualValues(t, n, s.MaxConcurrent())
	require.EqualValues(t, n, s.Calls(subjects.RoleImplementer))
	require.EqualValues(t, 1, s.Calls(subjects.RolePlanner))
	require.EqualValues(t, 1, s.Calls(subjects.RoleJudge))
	require.EqualValues(t, n+2, s.TotalCalls())
	require.Zero(t, s.InFlight())

	s.Reset()
	require.Zero(t, s.TotalCalls())
	require.Zero(t, s.MaxConcurrent())
	require.Zero(t, s.Calls(subjects.RoleImplementer))
}
