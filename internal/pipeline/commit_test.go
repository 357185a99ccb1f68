package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
)

func TestBoundCalls(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	far := time.Now().Add(time.Hour)
	withDeadline, cancelDeadline := context.WithDeadline(parent, far)
	defer cancelDeadline()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		n    int
		want time.Duration // from now; 0: the context's own deadline
	}{
		{"a commit's state write and two events", parent, 3, 3 * callTimeout},
		{"a state write alone", parent, 1, callTimeout},
		{"no call still gets one call's bound", parent, 0, callTimeout},
		{"a deadline already set is kept", withDeadline, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now()
			ctx, cancel := boundCalls(tc.ctx, tc.n)
			defer cancel()
			d, ok := ctx.Deadline()
			require.True(t, ok, "jetstream adds a timer per call to a context without a deadline")
			if tc.want == 0 {
				require.Equal(t, far, d)
				require.Equal(t, tc.ctx, ctx)
				return
			}
			require.False(t, d.Before(before.Add(tc.want)))
			require.False(t, d.After(time.Now().Add(tc.want)))
		})
	}
	ctx, cancel := boundCalls(parent, 2)
	defer cancel()
	cancelParent()
	natstest.Recv(t, ctx.Done(), 30*time.Second)
	require.ErrorIs(t, ctx.Err(), context.Canceled, "the task's cancellation reaches the commit's calls")
}
