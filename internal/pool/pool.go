// Package pool bounds how many tasks a worker runs at once and counts them.
package pool

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Pool is a fixed set of slots. A slot is taken with Acquire or TryAcquire
// and given back when the function started with Go returns.
type Pool struct {
	slots    chan struct{}
	wg       sync.WaitGroup
	inFlight atomic.Int64
	started  atomic.Int64
	finished atomic.Int64
	busyNS   atomic.Int64
}

// New returns a pool of size slots; size must be at least 1.
func New(size int) *Pool {
	if size < 1 {
		size = 1
	}
	return &Pool{slots: make(chan struct{}, size)}
}

// Size is the number of slots.
func (p *Pool) Size() int { return cap(p.slots) }

// Free is the number of slots not taken.
func (p *Pool) Free() int { return cap(p.slots) - len(p.slots) }

// Acquire takes one slot, waiting until one is free or ctx is done.
func (p *Pool) Acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryAcquire takes one slot if one is free.
func (p *Pool) TryAcquire() bool {
	select {
	case p.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// AcquireFree takes every free slot, at least one: it waits for the first
// until one is free or ctx is done, then takes the others that are free
// now. It returns how many it took.
func (p *Pool) AcquireFree(ctx context.Context) (int, error) {
	if err := p.Acquire(ctx); err != nil {
		return 0, err
	}
	n := 1
	for n < p.Size() && p.TryAcquire() {
		n++
	}
	return n, nil
}

// Release gives back a slot taken but not used by Go.
func (p *Pool) Release() { <-p.slots }

// Go runs fn on a taken slot and gives the slot back when fn returns.
func (p *Pool) Go(fn func()) {
	p.wg.Add(1)
	p.inFlight.Add(1)
	p.started.Add(1)
	go func() {
		start := time.Now()
		defer func() {
			p.busyNS.Add(int64(time.Since(start)))
			p.finished.Add(1)
			p.inFlight.Add(-1)
			<-p.slots
			p.wg.Done()
		}()
		fn()
	}()
}

// Wait blocks until every function started with Go has returned, or ctx is
// done; it reports whether they all returned.
func (p *Pool) Wait(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// Stats is a snapshot of the pool's counters.
type Stats struct {
	Size     int
	InFlight int64
	Started  int64
	Finished int64
	Busy     time.Duration
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	return Stats{
		Size:     p.Size(),
		InFlight: p.inFlight.Load(),
		Started:  p.started.Load(),
		Finished: p.finished.Load(),
		Busy:     time.Duration(p.busyNS.Load()),
	}
}
