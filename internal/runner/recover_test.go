package runner

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestWithRecoverSimPanic(t *testing.T) {
	t.Parallel()
	r := Chain(NewSim(SimOptions{}), WithRecover())
	res, err := r.Run(context.Background(), simReq(t, subjects.RoleJudge, `{"panic": "judge"}`))
	require.ErrorIs(t, err, ErrPanic)
	require.Contains(t, err.Error(), "sim: panic in judge")
	require.Contains(t, err.Error(), "goroutine")
	require.Empty(t, res.Output)
}

func TestWithRecoverThroughTimeout(t *testing.T) {
	t.Parallel()
	// The panic happens in WithTimeout's goroutine and is forwarded.
	r := Chain(NewSim(SimOptions{}), WithRecover(), WithTimeout(time.Hour))
	_, err := r.Run(context.Background(), simReq(t, subjects.RolePlanner, `{"panic": "planner"}`))
	require.ErrorIs(t, err, ErrPanic)
	require.Contains(t, err.Error(), "sim: panic in planner")
	require.Contains(t, err.Error(), "(*Sim).Run", "stack of the original goroutine")
}

func TestWithRecoverStackBounded(t *testing.T) {
	t.Parallel()
	var deep func(n int)
	deep = func(n int) {
		if n == 0 {
			panic("deep")
		}
		deep(n - 1)
	}
	r := WithRecover()(Func{ID: "x", F: func(context.Context, Request) (Result, error) { deep(200); return Result{}, nil }})
	_, err := r.Run(context.Background(), Request{Role: subjects.RoleImplementer})
	require.ErrorIs(t, err, ErrPanic)
	require.Less(t, len(err.Error()), maxPanicStack+200)
}

func TestWithRecoverNoPanic(t *testing.T) {
	t.Parallel()
	r := WithRecover()(NewSim(SimOptions{}))
	require.Equal(t, SimIdentity, r.Identity())
	res, err := r.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	require.NoError(t, err)
	require.Equal(t, ActionPlan, res.Action)
}
