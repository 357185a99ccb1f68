package consumers

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Pool bounds how many tasks run at once and counts them; the consumers of
// a worker's queues share one. It is a fixed set of slots: a slot is taken
// with Acquire, TryAcquire or AcquireFree and given back with Release, or
// when the function started on it with Go returns. Never more slots are
// taken than Size.
//
// Slots are handed out in order of asking: a slot given back goes to the
// first goroutine waiting for one, so a fetch that has just released its
// unused slots cannot take them straight back from a queue in line before
// it. A consumer takes slots only for the messages it can start, and one
// whose fetch waits for messages gives its slots back as soon as a queue
// with work waiting needs them (see reserve).
type Pool struct {
	size int

	mu      sync.Mutex
	used    int       // slots taken: reserved for a fetch, or running
	waiters []*waiter // in order of asking
	hungry  int       // waiters whose queue has work waiting
	want    chan struct{}

	work    chan func()  // to a runner waiting for work
	idle    atomic.Int64 // how long a runner waits for work (a time.Duration)
	runners atomic.Int64 // runners alive
	waiting atomic.Int64 // runners waiting for work
	spawned atomic.Int64 // runners started

	wg       sync.WaitGroup
	inFlight atomic.Int64
	started  atomic.Int64
	finished atomic.Int64
	busyNS   atomic.Int64
}

type waiter struct {
	ch      chan struct{} // closed when a slot is handed to it
	hungry  bool
	granted bool
}

// NewPool returns a pool of size slots (at least 1).
func NewPool(size int) *Pool {
	if size < 1 {
		size = 1
	}
	p := &Pool{size: size, want: make(chan struct{}), work: make(chan func())}
	p.idle.Store(int64(idleRunner))
	return p
}

// Size is the number of slots.
func (p *Pool) Size() int { return p.size }

// Free is the number of slots not taken.
func (p *Pool) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size - p.used
}

// Waiting is the number of callers waiting for a slot.
func (p *Pool) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiters)
}

// Acquire takes one slot, waiting in line until one is free or ctx is done.
func (p *Pool) Acquire(ctx context.Context) error { return p.acquire(ctx, false) }

// TryAcquire takes one slot if one is free and nobody waits for it.
func (p *Pool) TryAcquire() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.take()
}

// take takes a free slot nobody waits for; p.mu is held.
func (p *Pool) take() bool {
	if p.used < p.size && len(p.waiters) == 0 {
		p.used++
		return true
	}
	return false
}

func (p *Pool) acquire(ctx context.Context, hungry bool) error {
	p.mu.Lock()
	if p.take() {
		p.mu.Unlock()
		return nil
	}
	w := &waiter{ch: make(chan struct{}), hungry: hungry}
	p.waiters = append(p.waiters, w)
	if hungry {
		if p.hungry++; p.hungry == 1 {
			close(p.want)
		}
	}
	p.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	if w.granted { // handed a slot while giving up: pass it on
		p.mu.Unlock()
		p.Release()
		return ctx.Err()
	}
	p.waiters = slices.DeleteFunc(p.waiters, func(x *waiter) bool { return x == w })
	p.unwant(w)
	p.mu.Unlock()
	return ctx.Err()
}

// unwant notes that w no longer waits; p.mu is held.
func (p *Pool) unwant(w *waiter) {
	if w.hungry {
		if p.hungry--; p.hungry == 0 {
			p.want = make(chan struct{})
		}
	}
}

// reserve takes slots for a fetch: at least one, waiting in line for it
// until one is free or ctx is done, then every other free slot as long as
// nobody else waits. hungry says the caller's queue has work waiting (its
// last fetch got messages), which makes idle holders give slots back (see
// wanted). It returns how many it took.
func (p *Pool) reserve(ctx context.Context, hungry bool) (int, error) {
	if err := p.acquire(ctx, hungry); err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 1
	for p.take() {
		n++
	}
	return n, nil
}

// AcquireFree takes at least one slot, waiting in line for it until one is
// free or ctx is done, then every other free slot as long as nobody else
// waits. It returns how many it took.
func (p *Pool) AcquireFree(ctx context.Context) (int, error) { return p.reserve(ctx, false) }

// wanted returns a channel that is closed while a hungry caller waits for a
// slot. A holder of slots it is not using (a fetch still waiting for
// messages) should then give them back.
func (p *Pool) wanted() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.want
}

// contended reports whether a hungry caller waits for a slot now.
func (p *Pool) contended() bool {
	select {
	case <-p.wanted():
		return true
	default:
		return false
	}
}

// Release gives back a slot taken but not used by Go: to the first waiter
// in line, if any.
func (p *Pool) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiters) == 0 {
		p.used--
		return
	}
	w := p.waiters[0]
	p.waiters = p.waiters[1:]
	p.unwant(w)
	w.granted = true
	close(w.ch)
}

// Go runs fn on a taken slot and gives the slot back when fn returns.
//
// fn runs on one of the pool's runners: a goroutine that, its function
// done, waits up to idleRunner for the next one before it ends. A task's
// goroutine grows its stack while it runs (a pipeline's calls go deep);
// a runner keeps the stack it grew, so the next task does not grow one
// from the smallest size again. A function that finds no runner waiting
// starts one; past maxRunners (twice the slots: a runner between two
// functions has given its slot back before it waits again) it runs on a
// goroutine of its own instead. No runner outlives idleRunner without work.
func (p *Pool) Go(fn func()) {
	p.wg.Add(1)
	p.inFlight.Add(1)
	p.started.Add(1)
	select {
	case p.work <- fn: // a runner waits for work: it takes fn
		return
	default:
	}
	for n := p.runners.Load(); n < int64(p.maxRunners()); n = p.runners.Load() {
		if p.runners.CompareAndSwap(n, n+1) {
			p.spawned.Add(1)
			go p.runner(fn)
			return
		}
	}
	go p.run(fn)
}

// maxRunners bounds the runners alive at once.
func (p *Pool) maxRunners() int { return 2 * p.size }

// idleRunner is how long a runner waits for work before it ends: long
// enough to carry a busy worker from one task to the next, short enough
// that an idle one holds no goroutines.
const idleRunner = 100 * time.Millisecond

// runner runs fn, then every function handed to it, until none comes for
// p.idle.
func (p *Pool) runner(fn func()) {
	defer p.runners.Add(-1)
	idle := time.NewTimer(time.Duration(p.idle.Load()))
	defer idle.Stop()
	for {
		p.run(fn)
		idle.Reset(time.Duration(p.idle.Load()))
		p.waiting.Add(1)
		select {
		case fn = <-p.work:
			p.waiting.Add(-1)
		case <-idle.C:
			p.waiting.Add(-1)
			return
		}
	}
}

// run runs fn on its slot and gives the slot back.
func (p *Pool) run(fn func()) {
	start := time.Now()
	defer func() {
		p.busyNS.Add(int64(time.Since(start)))
		p.finished.Add(1)
		p.inFlight.Add(-1)
		p.Release()
		p.wg.Done()
	}()
	fn()
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

// PoolStats is a snapshot of a pool's counters.
type PoolStats struct {
	// Size is the number of slots.
	Size int
	// InFlight counts the tasks running now.
	InFlight int64
	// Started and Finished count tasks since the pool was made.
	Started, Finished int64
	// Busy is the time tasks ran, summed.
	Busy time.Duration
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	return PoolStats{
		Size:     p.Size(),
		InFlight: p.inFlight.Load(),
		Started:  p.started.Load(),
		Finished: p.finished.Load(),
		Busy:     time.Duration(p.busyNS.Load()),
	}
}
