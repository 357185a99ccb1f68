package consumers

import (
	"context"
	"fmt"
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

// barrier is a handler whose tasks run until released, counting how many
// run at once.
type barrier struct {
	release          chan struct{}
	running, maxSeen atomic.Int64
	done             atomic.Int64
}

func (b *barrier) Handle(ctx context.Context, _ Msg) Outcome {
	n := b.running.Add(1)
	for {
		m := b.maxSeen.Load()
		if n <= m || b.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	defer b.running.Add(-1)
	select {
	case <-b.release:
	case <-ctx.Done():
		return Outcome{Action: Nak}
	}
	b.done.Add(1)
	return Outcome{Action: Ack}
}

// Two queues share a pool. The idle one's fetch holds every slot while it
// waits (its fetch wait is a minute); tasks then arrive on the other. The
// busy queue still runs a task on every slot at once, long before the idle
// fetch would have given its slots back, and never more.
func TestIdleQueueGivesItsSlotsToABusyOne(t *testing.T) {
	t.Parallel()
	_, _, js, _ := natstest.Provisioned(t, natstest.Sync(time.Second))
	names := subjects.MustNames(subjects.DefaultPrefix)
	const slots, tasks = 3, 5
	pool := NewPool(slots)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	start := func(queue string, h Handler) {
		ensure := func(ctx context.Context) (jetstream.Consumer, error) {
			return broker.EnsureConsumer(ctx, js, names, queue, broker.ConsumerSettings{}, natstest.Quiet())
		}
		c, err := New(Deps{JetStream: js, Ensure: ensure, Pool: pool, Handler: h, Log: natstest.Quiet()},
			Config{Queue: queue, FetchWait: time.Minute, Watchdog: -1, Grace: time.Second})
		require.NoError(t, err)
		wg.Go(func() { _ = c.Run(ctx) })
	}
	idle := &barrier{release: make(chan struct{})}
	start("idle", idle)
	require.Eventually(t, func() bool { return pool.Free() == 0 }, 10*time.Second, 5*time.Millisecond,
		"the idle queue's fetch holds every slot")

	busy := &barrier{release: make(chan struct{})}
	start("busy", busy)
	for i := range tasks {
		_, err := js.Publish(ctx, names.TaskSubject("busy"), fmt.Appendf(nil, `{"i": %d}`, i))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return busy.running.Load() == slots }, 20*time.Second, 5*time.Millisecond,
		"the busy queue runs a task on every slot")
	close(busy.release)
	require.Eventually(t, func() bool { return busy.done.Load() == tasks }, 20*time.Second, 5*time.Millisecond)
	require.EqualValues(t, slots, busy.maxSeen.Load(), "never more tasks than slots")
	require.Zero(t, idle.maxSeen.Load())
	cancel()
	wg.Wait()
}
