package broker

import (
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestEnsureConsumer(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	ctx := testCtx(t)
	names := subjects.MustNames("drover")
	_, err := Provision(ctx, js, Settings{Names: names}, nil)
	require.NoError(t, err)

	c, err := EnsureConsumer(ctx, js, names, "default", ConsumerSettings{}, nil)
	require.NoError(t, err)
	cfg := c.CachedInfo().Config
	require.Equal(t, "drover-default", cfg.Durable)
	require.Equal(t, "drover.tasks.default", cfg.FilterSubject)
	require.Equal(t, jetstream.AckExplicitPolicy, cfg.AckPolicy)
	require.Equal(t, jetstream.DeliverAllPolicy, cfg.DeliverPolicy)
	require.Equal(t, 30*time.Second, cfg.AckWait)
	require.Equal(t, 6, cfg.MaxDeliver, "the server's max deliver is the workers' + 1")
	require.Equal(t, 1000, cfg.MaxAckPending)
	require.Empty(t, cfg.BackOff)

	// The same settings again change nothing.
	log, logs := newLog()
	_, err = EnsureConsumer(ctx, js, names, "default", ConsumerSettings{}, log)
	require.NoError(t, err)
	require.Empty(t, logs.String())

	// Different flags do not change it: the consumer's settings win, and
	// the difference is logged with both values.
	c, err = EnsureConsumer(ctx, js, names, "default", ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3}, log)
	require.NoError(t, err)
	info, err := c.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, info.Config.AckWait)
	require.Equal(t, 6, info.Config.MaxDeliver)
	require.Equal(t, 30*time.Second, c.CachedInfo().Config.AckWait, "the cached info holds the settings in force")
	require.Contains(t, logs.String(), "level=WARN")
	require.Contains(t, logs.String(), "ack_wait.consumer=30s ack_wait.flag=10s")
	require.Contains(t, logs.String(), "max_deliver.consumer=5 max_deliver.flag=3")
	require.NotContains(t, logs.String(), "consumer settings changed")

	// With Reconcile the flags are written and each change logged.
	logs.Reset()
	c, err = EnsureConsumer(ctx, js, names, "default", ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3, Reconcile: true}, log)
	require.NoError(t, err)
	info, err = c.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, info.Config.AckWait)
	require.Equal(t, 4, info.Config.MaxDeliver)
	require.Equal(t, 1000, info.Config.MaxAckPending)
	require.Equal(t, 10*time.Second, c.CachedInfo().Config.AckWait)
	require.Contains(t, logs.String(), "ack_wait.old=30s ack_wait.new=10s")
	require.Contains(t, logs.String(), "max_deliver.old=5 max_deliver.new=3")
	require.NotContains(t, logs.String(), "max_ack_pending")
	require.NotContains(t, logs.String(), "level=WARN")
}

// planConsumer: the consumer's own settings win over a worker's flags
// unless it reconciles; the contract's filter and no-backoff always win.
func TestPlanConsumer(t *testing.T) {
	t.Parallel()
	base := jetstream.ConsumerConfig{Durable: "drover-q", FilterSubject: "drover.tasks.q", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: 30 * time.Second, MaxDeliver: 6, MaxAckPending: 1000}
	with := func(f func(*jetstream.ConsumerConfig)) jetstream.ConsumerConfig { c := base; f(&c); return c }
	tests := []struct {
		name      string
		cur, want jetstream.ConsumerConfig
		reconcile bool
		changes   []string
		kept      []settingDiff
		update    jetstream.ConsumerConfig
	}{
		{name: "same", cur: base, want: base, update: base},
		{name: "same, reconcile", cur: base, want: base, reconcile: true, update: base},
		{name: "ack wait differs: kept", cur: base, want: with(func(c *jetstream.ConsumerConfig) { c.AckWait = 3 * time.Second }),
			kept: []settingDiff{{"ack_wait", 30 * time.Second, 3 * time.Second}}, update: base},
		{name: "all three differ: kept", cur: base,
			want:   with(func(c *jetstream.ConsumerConfig) { c.AckWait, c.MaxDeliver, c.MaxAckPending = time.Minute, 3, 50 }),
			kept:   []settingDiff{{"ack_wait", 30 * time.Second, time.Minute}, {"max_deliver", 5, 2}, {"max_ack_pending", 1000, 50}},
			update: base},
		{name: "all three differ: reconciled", cur: base, reconcile: true,
			want:    with(func(c *jetstream.ConsumerConfig) { c.AckWait, c.MaxDeliver, c.MaxAckPending = time.Minute, 3, 50 }),
			changes: []string{"ack_wait", "max_deliver", "max_ack_pending"},
			update:  with(func(c *jetstream.ConsumerConfig) { c.AckWait, c.MaxDeliver, c.MaxAckPending = time.Minute, 3, 50 })},
		{name: "filter and backoff restored without reconcile",
			cur: with(func(c *jetstream.ConsumerConfig) {
				c.FilterSubject, c.BackOff = "drover.tasks.>", []time.Duration{time.Second}
			}),
			want:    with(func(c *jetstream.ConsumerConfig) { c.AckWait = time.Minute }),
			changes: []string{"filter_subject", "backoff"},
			kept:    []settingDiff{{"ack_wait", 30 * time.Second, time.Minute}},
			update:  base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pl := planConsumer(tt.cur, tt.want, tt.reconcile)
			var changed []string
			for _, d := range pl.changes {
				changed = append(changed, d.setting)
			}
			require.Equal(t, tt.changes, changed)
			require.Equal(t, tt.kept, pl.kept)
			require.Equal(t, tt.update, pl.update)
		})
	}
}

func TestEnsureConsumerConcurrent(t *testing.T) {
	t.Parallel()
	e := startServer(t)
	ctx := testCtx(t)
	names := subjects.MustNames("drover")
	_, err := Provision(ctx, connectJS(t, e), Settings{Names: names}, nil)
	require.NoError(t, err)

	const workers = 4
	log, _ := newLog()
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		js := connectJS(t, e)
		wg.Go(func() {
			_, errs[i] = EnsureConsumer(ctx, js, names, "q1", ConsumerSettings{AckWait: time.Duration(i+1) * time.Second}, log)
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "worker %d", i)
	}
	st, err := connectJS(t, e).Stream(ctx, "DROVER_TASKS")
	require.NoError(t, err)
	var consumers []string
	lister := st.ConsumerNames(ctx)
	for name := range lister.Name() {
		consumers = append(consumers, name)
	}
	require.NoError(t, lister.Err())
	require.Equal(t, []string{"drover-q1"}, consumers)
}

func TestEnsureConsumerRejectsBadQueue(t *testing.T) {
	t.Parallel()
	_, err := EnsureConsumer(testCtx(t), nil, subjects.MustNames("drover"), "Bad.Queue", ConsumerSettings{}, nil)
	require.ErrorIs(t, err, subjects.ErrInvalidQueue)
}
