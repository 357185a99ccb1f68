package consumers

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// deadline bounds every wait of a test.
func deadline(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recv receives from c, or fails the test when ctx ends first.
func recv[T any](t *testing.T, ctx context.Context, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func TestNeverMoreThanSizeRunning(t *testing.T) {
	t.Parallel()
	ctx := deadline(t)
	const size, tasks = 3, 20
	p := NewPool(size)

	var running, maxRunning atomic.Int64
	started := make(chan struct{}, tasks)
	release := make(chan struct{})
	fn := func() {
		n := running.Add(1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		started <- struct{}{}
		<-release
		running.Add(-1)
	}
	fed := make(chan error, 1)
	go func() {
		for range tasks {
			if err := p.Acquire(ctx); err != nil {
				fed <- err
				return
			}
			p.Go(fn)
		}
		fed <- nil
	}()

	for range size {
		recv(t, ctx, started, "a function to start")
	}
	// The pool is full: nothing else can take a slot until one returns.
	require.Equal(t, 0, p.Free())
	require.False(t, p.TryAcquire())
	require.EqualValues(t, size, p.Stats().InFlight)

	// Release one at a time; each release lets exactly one more start.
	for i := range tasks {
		release <- struct{}{}
		if i+size < tasks {
			recv(t, ctx, started, "the next function to start")
		}
	}
	require.NoError(t, recv(t, ctx, fed, "the feeder to end"))
	require.True(t, p.Wait(ctx))
	require.EqualValues(t, size, maxRunning.Load())
	require.Zero(t, running.Load())
	require.Equal(t, size, p.Free())
}

func TestSlotArithmetic(t *testing.T) {
	t.Parallel()
	p := NewPool(2)
	require.Equal(t, 2, p.Size())
	require.Equal(t, 2, p.Free())

	require.True(t, p.TryAcquire())
	require.Equal(t, 1, p.Free())
	require.True(t, p.TryAcquire())
	require.Equal(t, 0, p.Free())
	require.False(t, p.TryAcquire())

	p.Release()
	require.Equal(t, 1, p.Free())
	require.True(t, p.TryAcquire())
	p.Release()
	p.Release()
	require.Equal(t, 2, p.Free())
	require.Zero(t, p.Stats().Started, "slots taken and given back run nothing")

	require.Equal(t, 1, NewPool(0).Size(), "a size below 1 is 1")
	require.Equal(t, 1, NewPool(-5).Size())
}

func TestAcquireFullCancelled(t *testing.T) {
	t.Parallel()
	p := NewPool(1)
	require.NoError(t, p.Acquire(deadline(t)))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, p.Acquire(ctx), context.Canceled)

	tctx, tcancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer tcancel()
	require.ErrorIs(t, p.Acquire(tctx), context.DeadlineExceeded)
	require.Equal(t, 0, p.Free(), "a failed Acquire takes no slot")

	p.Release()
	require.NoError(t, p.Acquire(deadline(t)))
}

func TestPoolWait(t *testing.T) {
	t.Parallel()
	p := NewPool(2)
	require.True(t, p.Wait(deadline(t)), "an idle pool has nothing to wait for")

	started := make(chan struct{})
	release := make(chan struct{})
	require.True(t, p.TryAcquire())
	p.Go(func() {
		close(started)
		<-release
	})
	recv(t, deadline(t), started, "the function to start")

	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.False(t, p.Wait(short), "Wait gives up when ctx ends while a function runs")

	close(release)
	require.True(t, p.Wait(deadline(t)))
	require.Equal(t, 2, p.Free())
}

func TestPoolStats(t *testing.T) {
	t.Parallel()
	ctx := deadline(t)
	p := NewPool(4)
	require.Equal(t, PoolStats{Size: 4}, p.Stats())

	started := make(chan struct{}, 3)
	release := make(chan struct{})
	for range 3 {
		require.True(t, p.TryAcquire())
		p.Go(func() {
			started <- struct{}{}
			<-release
		})
	}
	for range 3 {
		recv(t, ctx, started, "a function to start")
	}
	st := p.Stats()
	require.Equal(t, 4, st.Size)
	require.EqualValues(t, 3, st.InFlight)
	require.EqualValues(t, 3, st.Started)
	require.Zero(t, st.Finished)

	close(release)
	require.True(t, p.Wait(ctx))
	st = p.Stats()
	require.EqualValues(t, 0, st.InFlight)
	require.EqualValues(t, 3, st.Started)
	require.EqualValues(t, 3, st.Finished)
	require.Positive(t, st.Busy)
}

func TestAcquireFreeTakesEveryFreeSlot(t *testing.T) {
	p := NewPool(3)
	require.True(t, p.TryAcquire())
	n, err := p.AcquireFree(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, n, "the two slots still free")
	require.Zero(t, p.Free())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.AcquireFree(ctx)
	require.ErrorIs(t, err, context.Canceled, "no slot free and ctx done")
}

// A slot given back goes to the first waiter in line, not to the free
// count, so a fetch that releases its unused slots cannot take them
// straight back from a queue waiting before it.
func TestReleaseHandsSlotsInOrder(t *testing.T) {
	t.Parallel()
	ctx := deadline(t)
	p := NewPool(2)
	n, err := p.reserve(ctx, false)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	got := make(chan int, 2)
	for i := 1; i <= 2; i++ {
		go func() {
			if p.Acquire(ctx) == nil {
				got <- i
			}
		}()
		require.Eventually(t, func() bool { return p.Waiting() == i }, 5*time.Second, time.Millisecond)
	}
	p.Release()
	require.Equal(t, 1, recv(t, ctx, got, "the first waiter's slot"), "the first in line")
	require.Zero(t, p.Free())
	require.False(t, p.TryAcquire(), "nothing free while someone waits")
	p.Release()
	require.Equal(t, 2, recv(t, ctx, got, "the second waiter's slot"))
	require.Zero(t, p.Waiting())
	p.Release()
	p.Release()
	require.Equal(t, 2, p.Free())
}

// Wanted is closed exactly while a hungry caller waits for a slot.
func TestWantedWhileAHungryCallerWaits(t *testing.T) {
	t.Parallel()
	ctx := deadline(t)
	p := NewPool(1)
	require.True(t, p.TryAcquire())
	require.False(t, p.contended())

	idle := make(chan error, 1)
	go func() { idle <- p.Acquire(ctx) }() // not hungry: no signal
	hctx, cancelHungry := context.WithCancel(ctx)
	hungry := make(chan error, 1)
	go func() { _, err := p.reserve(hctx, true); hungry <- err }()
	recv(t, ctx, p.wanted(), "the hungry waiter's signal")
	require.True(t, p.contended())

	// The hungry waiter gives up: the signal is withdrawn.
	cancelHungry()
	require.ErrorIs(t, recv(t, ctx, hungry, "the hungry waiter to give up"), context.Canceled)
	require.False(t, p.contended())

	p.Release() // to the idle waiter
	require.NoError(t, recv(t, ctx, idle, "the idle waiter's slot"))
	require.Zero(t, p.Free())
	p.Release()
	require.Equal(t, 1, p.Free())
}

// A waiter handed a slot as it gives up passes the slot on.
func TestCancelledWaiterPassesItsSlotOn(t *testing.T) {
	t.Parallel()
	ctx := deadline(t)
	for range 50 {
		p := NewPool(1)
		require.True(t, p.TryAcquire())
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Acquire(wctx) }()
		require.Eventually(t, func() bool { return p.Waiting() == 1 }, 5*time.Second, time.Millisecond)
		go cancel()
		p.Release()
		if err := recv(t, ctx, done, "the waiter to return"); err == nil {
			p.Release()
		}
		require.Equal(t, 1, p.Free(), "no slot lost")
	}
}

// waitFor polls cond until it holds or ctx ends: for state a pool changes
// in its own goroutines, with no event to wait on.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

func TestRunnersAreReused(t *testing.T) {
	t.Parallel()
	ctx := deadline(t)
	const tasks = 20
	p := NewPool(1)
	p.idle.Store(int64(2 * time.Second))
	for range tasks {
		require.NoError(t, p.Acquire(ctx))
		done := make(chan struct{})
		p.Go(func() { close(done) })
		recv(t, ctx, done, "the function to run")
		waitFor(t, ctx, "the runner to wait for work", func() bool { return p.waiting.Load() == 1 })
	}
	require.EqualValues(t, tasks, p.Stats().Finished)
	// A function started in the instant between a runner counting itself
	// as waiting and its wait starts a runner of its own: rare, never most.
	require.LessOrEqual(t, p.spawned.Load(), int64(tasks/4), "most functions ran on the runner of the one before")
	// One more function re-arms the waiting runner with a short wait, so
	// it ends now instead of after the long one the loop needed.
	p.idle.Store(int64(time.Millisecond))
	require.NoError(t, p.Acquire(ctx))
	p.Go(func() {})
	waitFor(t, ctx, "the idle runners to end", func() bool { return p.runners.Load() == 0 })
}

func TestRunnersEndWhenIdle(t *testing.T) {
	t.Parallel()
	ctx := deadline(t)
	const size = 4
	p := NewPool(size)
	p.idle.Store(int64(time.Millisecond))
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(size)
	for range size {
		require.NoError(t, p.Acquire(ctx))
		p.Go(func() { started.Done(); <-release })
	}
	started.Wait()
	require.EqualValues(t, size, p.runners.Load(), "one runner per busy slot")
	close(release)
	require.True(t, p.Wait(ctx))
	waitFor(t, ctx, "every runner to end", func() bool { return p.runners.Load() == 0 })
}

func TestRunnersBounded(t *testing.T) {
	t.Parallel()
	ctx := deadline(t)
	const size, tasks = 4, 2000
	p := NewPool(size)
	p.idle.Store(int64(200 * time.Millisecond))
	var most atomic.Int64
	for range tasks {
		require.NoError(t, p.Acquire(ctx))
		p.Go(func() {
			n := p.runners.Load()
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		})
	}
	require.True(t, p.Wait(ctx))
	require.LessOrEqual(t, most.Load(), int64(2*size), "runners: at most twice the slots")
	require.EqualValues(t, tasks, p.Stats().Finished)
	waitFor(t, ctx, "every runner to end", func() bool { return p.runners.Load() == 0 })
}
