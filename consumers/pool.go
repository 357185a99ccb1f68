package consumers

import (
	"time"

	"github.com/droverhq/drover/internal/pool"
)

// Pool bounds how many tasks run at once; the consumers of a worker's
// queues share one. A consumer takes slots only for the messages it can
// start, and a queue whose fetch waits for messages gives its slots back as
// soon as a queue with work waiting needs them.
type Pool struct{ p *pool.Pool }

// NewPool returns a pool of size slots (at least 1).
func NewPool(size int) *Pool { return &Pool{p: pool.New(size)} }

// Size is the number of slots.
func (p *Pool) Size() int { return p.p.Size() }

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
	st := p.p.Stats()
	return PoolStats{Size: st.Size, InFlight: st.InFlight, Started: st.Started, Finished: st.Finished, Busy: st.Busy}
}
