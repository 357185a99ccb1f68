package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/redact"
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

func TestRunsInlineThroughMiddlewares(t *testing.T) {
	t.Parallel()
	sim := NewSim(SimOptions{})
	elsewhere := Func{ID: "elsewhere", F: func(context.Context, Request) (Result, error) { return Result{}, nil }}
	mws := []Middleware{WithRedact(redact.New(testSecret)), WithRecover(), WithTimeout(time.Hour)}
	for _, tc := range []struct {
		name string
		r    Runner
		want bool
	}{
		{"sim", sim, true},
		{"sim in every middleware", Chain(sim, mws...), true},
		{"a Func that says it runs in the caller", Func{ID: "x", InCaller: true}, true},
		{"a Func that does not say so", elsewhere, false},
		{"such a Func in every middleware", Chain(elsewhere, mws...), false},
		{"exec", &Exec{}, false},
		{"openai", &OpenAI{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, RunsInline(tc.r))
		})
	}
}

// A panic shows where the runner ran: in the caller's goroutine it
// arrives as itself; from a goroutine of WithTimeout's, forwarded.
func TestWithTimeoutRunsAnInlineRunnerInTheCaller(t *testing.T) {
	t.Parallel()
	boom := func(inCaller bool) Runner {
		return Func{ID: "boom", InCaller: inCaller, F: func(context.Context, Request) (Result, error) { panic("boom") }}
	}
	caught := func(r Runner) (v any) {
		defer func() { v = recover() }()
		_, _ = WithTimeout(time.Hour)(r).Run(context.Background(), Request{Role: subjects.RolePlanner})
		return nil
	}
	require.Equal(t, "boom", caught(boom(true)), "inline: the panic is the runner's own, raised in the caller")
	fp, ok := caught(boom(false)).(*forwardedPanic)
	require.True(t, ok, "not inline: the panic comes from WithTimeout's goroutine, forwarded")
	require.Equal(t, "boom", fp.value)
}

func TestWithTimeoutInlineKeepsTheTimeoutError(t *testing.T) {
	t.Parallel()
	late := Func{ID: "late", InCaller: true, F: func(ctx context.Context, _ Request) (Result, error) {
		<-ctx.Done()
		return Result{}, ctx.Err()
	}}
	_, err := WithTimeout(10*time.Millisecond)(late).Run(context.Background(), Request{Role: subjects.RoleJudge})
	require.ErrorIs(t, err, ErrTimeout)
	require.Contains(t, err.Error(), "judge exceeded 10ms")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = WithTimeout(time.Hour)(late).Run(ctx, Request{Role: subjects.RoleJudge})
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrTimeout, "the parent's end is not a timeout")
}
