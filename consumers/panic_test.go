package consumers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// stubPoisoner answers Poison with out, or panics.
type stubPoisoner struct {
	out   Outcome
	panic bool
}

func (s stubPoisoner) Handle(context.Context, Msg) Outcome { panic("handle") }
func (s stubPoisoner) Poison(context.Context, Msg, error) Outcome {
	if s.panic {
		panic("poison")
	}
	return s.out
}

type plainHandler struct{}

func (plainHandler) Handle(context.Context, Msg) Outcome { panic("handle") }

// What a panicked message becomes, without a broker: retried, failed by
// the handler, or (no JetStream for the last-resort DLQ copy) left for a
// later delivery rather than dropped.
func TestPanicked(t *testing.T) {
	t.Parallel()
	failed := Outcome{Action: Term, Terminal: subjects.EventTaskFailed, Reason: subjects.ReasonMaxDeliveries}
	infra := Outcome{Action: Nak, Delay: time.Second, Err: errors.New("kv down")}
	tests := []struct {
		name      string
		h         Handler
		delivered uint64
		stale     bool
		want      Action
		wantErr   error
	}{
		{name: "first delivery: retried", h: stubPoisoner{out: failed}, delivered: 1, want: Nak},
		{name: "stale: left alone", h: stubPoisoner{out: failed}, delivered: 3, stale: true, want: Abandon, wantErr: ErrClaimLost},
		{name: "last delivery: failed by the handler", h: stubPoisoner{out: failed}, delivered: 3, want: Term},
		{name: "handler could not fail it, one delivery left", h: stubPoisoner{out: infra}, delivered: 3, want: Nak},
		{name: "handler could not fail it on the server's last: last resort", h: stubPoisoner{out: infra}, delivered: 4, want: Nak, wantErr: errNoJetStream},
		{name: "failing panics: last resort", h: stubPoisoner{panic: true}, delivered: 3, want: Nak, wantErr: errNoJetStream},
		{name: "no Poisoner: last resort", h: plainHandler{}, delivered: 3, want: Nak, wantErr: errNoJetStream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(Deps{Pool: NewPool(1), Handler: tt.h, Log: natstest.Quiet()}, Config{Queue: "q", RetryBase: time.Second})
			require.NoError(t, err)
			d := Msg{Queue: "q", Body: []byte(`{}`), StreamSeq: 7, NumDelivered: tt.delivered, MaxDeliver: 3}
			_, perr := guard(func() Outcome { return c.deps.Handler.Handle(context.Background(), d) })
			var pe *PanicError
			require.ErrorAs(t, perr, &pe)
			require.NotEmpty(t, pe.Stack)
			out := c.panicked(context.Background(), d, perr, tt.stale)
			require.Equal(t, tt.want, out.Action)
			if tt.wantErr != nil {
				require.ErrorIs(t, out.Err, tt.wantErr)
			}
			if out.Action == Nak {
				require.Positive(t, out.Delay)
			}
			require.EqualValues(t, 1, c.Stats().Panics)
		})
	}
}

// A panic value is bounded in error text: it may carry untrusted input.
func TestPanicErrorBounded(t *testing.T) {
	t.Parallel()
	long := make([]byte, 10<<10)
	for i := range long {
		long[i] = 'x'
	}
	err := &PanicError{Value: string(long)}
	require.Less(t, len(err.Error()), 1200)
}
