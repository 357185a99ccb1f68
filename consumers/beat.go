package consumers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// beat is a running heartbeat: a timer that sends a beat each interval,
// with no goroutine of its own between beats (a delivery starts one and
// stops it, most often before its first beat is due).
type beat struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	wait   time.Duration
	every  time.Duration
	now    func() time.Time
	send   func() error
	last   atomic.Int64 // unix nanos of the last beat (or the start)

	mu      sync.Mutex // held by a beat being handled, and by stop
	stopped bool
	timer   *time.Timer // nil when ticks are driven by hand (tests)
}

// stale reports whether the claim went a whole ack wait without a beat.
func (b *beat) stale() bool { return b.now().Sub(time.Unix(0, b.last.Load())) >= b.wait }

// stop ends the heartbeat and reports whether the claim is stale. No beat
// is sent once it returns: one being sent is waited for.
func (b *beat) stop() bool {
	b.mu.Lock()
	b.stopped = true
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
	return b.stale()
}

// newBeat keeps a claim with a beat (send) on every tick. If the worker
// could not beat for a whole ack wait (wait; it was stopped or starved), the
// server has handed the message on: the task's context is cancelled with
// ErrClaimLost and nothing more is sent. Time is read
// from now when a tick is handled. Nothing ticks it: startBeat does, every
// interval, and tests by hand.
func newBeat(ctx context.Context, cancel context.CancelCauseFunc, wait time.Duration, now func() time.Time, send func() error) *beat {
	b := &beat{ctx: ctx, cancel: cancel, wait: wait, now: now, send: send}
	b.last.Store(now().UnixNano())
	return b
}

// startBeat is newBeat ticked every interval by a timer, from when it
// starts.
func startBeat(ctx context.Context, cancel context.CancelCauseFunc, wait, every time.Duration, now func() time.Time, send func() error) *beat {
	b := newBeat(ctx, cancel, wait, now, send)
	b.every = every
	b.mu.Lock() // the first tick waits until the timer is b's
	b.timer = time.AfterFunc(every, func() { b.tick() })
	b.mu.Unlock()
	return b
}

// tick handles one tick and reports whether the beat goes on, its timer
// set for the next: it does not once stopped, once the task's context
// ends, or once the claim is lost. A beat that fails does not renew the
// claim; failures for a whole ack wait lose it.
func (b *beat) tick() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || b.ctx.Err() != nil {
		return false
	}
	if b.stale() {
		b.cancel(ErrClaimLost)
		return false
	}
	if b.send() == nil {
		b.last.Store(b.now().UnixNano())
	}
	if b.timer != nil {
		b.timer.Reset(b.every)
	}
	return true
}
