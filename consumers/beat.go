package consumers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// beat is a running heartbeat.
type beat struct {
	done   chan struct{}
	wg     sync.WaitGroup
	last   atomic.Int64 // unix nanos of the last beat (or the start)
	wait   time.Duration
	now    func() time.Time
	onStop func()
}

// stale reports whether the claim went a whole ack wait without a beat.
func (b *beat) stale() bool { return b.now().Sub(time.Unix(0, b.last.Load())) >= b.wait }

// stop ends the heartbeat and reports whether the claim is stale.
func (b *beat) stop() bool {
	close(b.done)
	b.wg.Wait()
	if b.onStop != nil {
		b.onStop()
	}
	return b.stale()
}

// startBeat keeps a claim with a beat (send) on every tick. If the worker
// could not beat for a whole ack wait (wait; it was stopped or starved), the
// server has handed the message on: the task's context is cancelled with
// ErrClaimLost and nothing more is sent. Time is read from now when a tick
// is handled, never from the tick, which may have waited in its channel
// through a stop.
func startBeat(ctx context.Context, cancel context.CancelCauseFunc, wait time.Duration, ticks <-chan time.Time,
	now func() time.Time, send func() error) *beat {
	b := &beat{done: make(chan struct{}), wait: wait, now: now}
	b.last.Store(now().UnixNano())
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.done:
				return
			case <-ctx.Done():
				return
			case <-ticks:
				if b.stale() {
					cancel(ErrClaimLost)
					return
				}
				if send() == nil {
					b.last.Store(now().UnixNano())
				}
			}
		}
	}()
	return b
}
