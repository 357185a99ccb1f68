package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestWithTimeoutHang(t *testing.T) {
	t.Parallel()
	r := Chain(NewSim(SimOptions{}), WithTimeout(20*time.Millisecond))
	require.Equal(t, SimIdentity, r.Identity())
	_, err := r.Run(context.Background(), simReq(t, subjects.RoleImplementer, `{"hang": "implementer"}`))
	require.ErrorIs(t, err, ErrTimeout)
	require.Contains(t, err.Error(), "implementer")
	require.Contains(t, err.Error(), "20ms")
}

func TestWithTimeoutIgnoredContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	stubborn := Func{ID: "stubborn", F: func(context.Context, Request) (Result, error) {
		<-release // ignores ctx entirely
		return Result{Action: "late"}, nil
	}}
	_, err := WithTimeout(10*time.Millisecond)(stubborn).Run(context.Background(), Request{Role: subjects.RoleJudge})
	require.ErrorIs(t, err, ErrTimeout)
}

func TestWithTimeoutParentCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	inner := Func{ID: "x", F: func(ctx context.Context, _ Request) (Result, error) {
		cancel()
		<-ctx.Done()
		return Result{}, ctx.Err()
	}}
	_, err := WithTimeout(time.Hour)(inner).Run(ctx, Request{Role: subjects.RolePlanner})
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrTimeout)
}

func TestWithTimeoutPassesThrough(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	inner := Func{ID: "x", F: func(_ context.Context, req Request) (Result, error) {
		if req.Try == 2 {
			return Result{}, boom
		}
		return Result{Action: "ok"}, nil
	}}
	r := WithTimeout(time.Hour)(inner)
	res, err := r.Run(context.Background(), Request{Try: 1})
	require.NoError(t, err)
	require.Equal(t, "ok", res.Action)
	_, err = r.Run(context.Background(), Request{Try: 2})
	require.ErrorIs(t, err, boom)
}

func TestWithTimeoutZeroIsNoop(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	require.Same(t, s, WithTimeout(0)(s))
	require.Same(t, s, WithTimeout(-time.Second)(s))
}
