package consumers

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// settle maps the handler's outcome to what is sent for the message.
func TestSettle(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name            string
		out             Outcome
		stale, stopping bool
		want            Outcome
	}{
		{name: "ack", out: Outcome{Action: Ack}, want: Outcome{Action: Ack}},
		{name: "term keeps its reason", out: Outcome{Action: Term, Reason: subjects.ReasonRoleFailed},
			want: Outcome{Action: Term, Reason: subjects.ReasonRoleFailed}},
		{name: "nak with delay", out: Outcome{Action: Nak, Delay: time.Second, Err: boom},
			want: Outcome{Action: Nak, Delay: time.Second, Err: boom}},
		{name: "nak without delay", out: Outcome{Action: Nak}, want: Outcome{Action: Nak}},
		{name: "negative delay: at once", out: Outcome{Action: Nak, Delay: -time.Second}, want: Outcome{Action: Nak}},
		{name: "stopping: nak at once", out: Outcome{Action: Nak, Delay: time.Minute, Err: boom}, stopping: true,
			want: Outcome{Action: Nak, Err: boom}},
		{name: "abandon sends nothing", out: Outcome{Action: Abandon, Err: boom}, want: Outcome{Action: Abandon, Err: boom}},
		{name: "stale nak: claim lost", out: Outcome{Action: Nak, Delay: time.Second}, stale: true,
			want: Outcome{Action: Abandon, Err: ErrClaimLost}},
		{name: "stale nak while stopping: claim lost", out: Outcome{Action: Nak}, stale: true, stopping: true,
			want: Outcome{Action: Abandon, Err: ErrClaimLost}},
		{name: "stale ack: the fenced terminal still settles", out: Outcome{Action: Ack}, stale: true, want: Outcome{Action: Ack}},
		{name: "stale term", out: Outcome{Action: Term, Reason: subjects.ReasonMaxAttempts}, stale: true,
			want: Outcome{Action: Term, Reason: subjects.ReasonMaxAttempts}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, settle(tt.out, tt.stale, tt.stopping))
		})
	}
}

// afterPanic: retry until the last allowed delivery, then fail the task;
// nothing when the claim is lost.
func TestAfterPanic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		delivered  uint64
		maxDeliver int
		stale      bool
		want       Action
	}{
		{1, 5, false, Nak},
		{4, 5, false, Nak},
		{5, 5, false, Term},
		{6, 5, false, Term}, // the server's extra delivery
		{1, 1, false, Term},
		{1, 0, false, Term}, // no limit known: one delivery
		{3, 5, true, Abandon},
		{5, 5, true, Abandon},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, afterPanic(tt.delivered, tt.maxDeliver, tt.stale), "%+v", tt)
	}
}

// settingsOf reads the consumer's own settings; what it lacks comes from
// the worker's.
func TestSettingsOf(t *testing.T) {
	t.Parallel()
	cfg := Config{AckWait: 30 * time.Second, MaxDeliver: 5}
	tests := []struct {
		name string
		cc   jetstream.ConsumerConfig
		want Settings
	}{
		{"consumer's", jetstream.ConsumerConfig{AckWait: 9 * time.Second, MaxDeliver: 4, MaxAckPending: 50},
			Settings{AckWait: 9 * time.Second, MaxDeliver: 3, MaxAckPending: 50}},
		{"unknown", jetstream.ConsumerConfig{}, Settings{AckWait: 30 * time.Second, MaxDeliver: 5}},
		{"unlimited deliveries", jetstream.ConsumerConfig{AckWait: time.Second, MaxDeliver: -1},
			Settings{AckWait: time.Second, MaxDeliver: 5}},
		{"one delivery", jetstream.ConsumerConfig{AckWait: time.Second, MaxDeliver: 1},
			Settings{AckWait: time.Second, MaxDeliver: 1}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, settingsOf(tt.cc, cfg), tt.name)
	}
	require.Equal(t, 3*time.Second, Settings{AckWait: 9 * time.Second}.HeartbeatInterval())
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A heartbeat renews the claim on each tick; a worker that could not beat
// for a whole ack wait (its ticks came late) cancels the task with
// ErrClaimLost and sends nothing more, and its Nak becomes Abandon.
func TestBeatStaleness(t *testing.T) {
	t.Parallel()
	const wait = 30 * time.Second
	clk := &clock{now: time.Unix(1000, 0)}
	var sent atomic.Int64
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	b := newBeat(ctx, cancel, wait, clk.Now, func() error { sent.Add(1); return nil })

	for range 3 { // on time: each tick a third of the ack wait apart
		clk.Add(wait / 3)
		require.True(t, b.tick())
		require.False(t, b.stale())
	}
	require.EqualValues(t, 3, sent.Load())
	require.NoError(t, ctx.Err())

	// Stopped for a whole ack wait: the next tick finds the claim stale.
	clk.Add(wait)
	require.True(t, b.stale(), "the pipeline's Stale sees it before the tick")
	require.False(t, b.tick())
	require.ErrorIs(t, context.Cause(ctx), ErrClaimLost)
	require.False(t, b.tick(), "no beat after the claim was lost")
	require.True(t, b.stop())
	require.EqualValues(t, 3, sent.Load(), "no beat after the claim was lost")
	require.Equal(t, Outcome{Action: Abandon, Err: ErrClaimLost}, settle(Outcome{Action: Nak, Delay: time.Second}, true, false))
}

// A failed beat does not renew the claim: failures for a whole ack wait
// lose it.
func TestBeatFailuresLoseTheClaim(t *testing.T) {
	t.Parallel()
	const wait = 30 * time.Second
	clk := &clock{now: time.Unix(1000, 0)}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	b := newBeat(ctx, cancel, wait, clk.Now, func() error { return errors.New("no route") })
	for range 2 {
		clk.Add(wait / 3)
		require.True(t, b.tick())
	}
	clk.Add(wait / 3)
	require.False(t, b.tick())
	require.ErrorIs(t, context.Cause(ctx), ErrClaimLost)
	require.True(t, b.stop())
}

// A beat stopped in time reports a fresh claim, leaves the context be and
// sends nothing more; neither does one whose task ended.
func TestBeatStop(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.Unix(1000, 0)}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var sent atomic.Int64
	b := newBeat(ctx, cancel, time.Second, clk.Now, func() error { sent.Add(1); return nil })
	require.False(t, b.stop())
	require.NoError(t, ctx.Err())
	require.False(t, b.tick())
	require.Zero(t, sent.Load())

	ended, end := context.WithCancelCause(context.Background())
	b = newBeat(ended, end, time.Second, clk.Now, func() error { sent.Add(1); return nil })
	end(nil)
	require.False(t, b.tick())
	require.Zero(t, sent.Load())
}

// The timer beats every interval until stopped, and not after.
func TestBeatTimer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	beats := make(chan struct{}, 16)
	b := startBeat(ctx, cancel, time.Hour, time.Millisecond, time.Now, func() error {
		select {
		case beats <- struct{}{}:
		default:
		}
		return nil
	})
	for range 3 {
		natstest.Recv(t, beats, 30*time.Second)
	}
	require.False(t, b.stop())
	for len(beats) > 0 { // what was sent before stop returned
		<-beats
	}
	require.False(t, b.tick(), "a tick after stop sends nothing")
	require.Empty(t, beats)
	require.NoError(t, ctx.Err())
}

// Action names are the metrics' labels.
func TestActionString(t *testing.T) {
	t.Parallel()
	for a, want := range map[Action]string{Ack: "ack", Term: "term", Nak: "nak", Abandon: "abandon", Action(9): "unknown"} {
		require.Equal(t, want, a.String())
	}
}

// New refuses a consumer that could not run, naming what is missing.
func TestNewNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	h := &barrier{release: make(chan struct{})}
	tests := []struct {
		name string
		deps Deps
		cfg  Config
		want string
	}{
		{"no queue", Deps{Pool: NewPool(1), Handler: h}, Config{}, "Config.Queue is required"},
		{"no pool", Deps{Handler: h}, Config{Queue: "q"}, "Deps.Pool is required"},
		{"no handler", Deps{Pool: NewPool(1)}, Config{Queue: "q"}, "Deps.Handler is required"},
		{"enough to build", Deps{Pool: NewPool(1), Handler: h}, Config{Queue: "q"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(tt.deps, tt.cfg)
			if tt.want != "" {
				require.ErrorContains(t, err, tt.want)
				require.Nil(t, c)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.cfg.Queue, c.cfg.Queue)
		})
	}
}
