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

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// While Hold fails the consumer fetches nothing: a queued task stays in
// the stream, not delivered; once Hold passes, it is fetched and handled.
func TestHoldStopsFetching(t *testing.T) {
	t.Parallel()
	_, _, js, _ := natstest.Provisioned(t, natstest.Sync(time.Second))
	names := subjects.MustNames(subjects.DefaultPrefix)
	var (
		down  atomic.Bool
		asked atomic.Int64
	)
	down.Store(true)
	hold := func() error {
		asked.Add(1)
		if down.Load() {
			return errors.New("repository unreachable")
		}
		return nil
	}
	ensure := func(ctx context.Context) (jetstream.Consumer, error) {
		return broker.EnsureConsumer(ctx, js, names, "q", broker.ConsumerSettings{}, natstest.Quiet())
	}
	h := &barrier{release: make(chan struct{})}
	close(h.release)
	c, err := New(Deps{JetStream: js, Ensure: ensure, Pool: NewPool(2), Handler: h, Hold: hold, Log: natstest.Quiet()},
		Config{Queue: "q", FetchWait: 200 * time.Millisecond, Watchdog: -1, Grace: time.Second, HoldPoll: 10 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	_, err = js.Publish(ctx, names.TaskSubject("q"), []byte(`{}`))
	require.NoError(t, err)
	seen := asked.Load()
	require.Eventually(t, func() bool { return asked.Load() >= seen+5 }, 10*time.Second, time.Millisecond, "Hold is asked again and again")
	cons, err := ensure(ctx)
	require.NoError(t, err)
	info, err := cons.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, info.NumPending, "not fetched while held")
	require.Zero(t, info.NumWaiting, "no pull request outstanding")
	require.Zero(t, h.done.Load())

	down.Store(false)
	require.Eventually(t, func() bool { return h.done.Load() == 1 }, 10*time.Second, time.Millisecond, "fetched once Hold passes")
}
