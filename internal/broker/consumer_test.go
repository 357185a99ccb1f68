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

	// Different flags update the consumer and log the change.
	c, err = EnsureConsumer(ctx, js, names, "default", ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3}, log)
	require.NoError(t, err)
	info, err := c.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, info.Config.AckWait)
	require.Equal(t, 4, info.Config.MaxDeliver)
	require.Equal(t, 1000, info.Config.MaxAckPending)
	require.Contains(t, logs.String(), "ack_wait.old=30s ack_wait.new=10s")
	require.Contains(t, logs.String(), "max_deliver.old=6 max_deliver.new=4")
	require.NotContains(t, logs.String(), "max_ack_pending")
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
