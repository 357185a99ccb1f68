// Package backoff is Drover's one retry policy: the delay before try n is a
// base doubled per try and capped, optionally jittered, and Sleep waits it
// out unless a context ends first.
//
// It is a small value type rather than a stateful backoff object (such as
// cenkalti/backoff's), because every caller already knows which try it is
// on: a JetStream delivery count, an HTTP retry number, a loop counter. A
// delay computed from that number is the same on every worker and after a
// restart, needs no reset, and is trivially table-tested.
package backoff

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Policy is a doubling delay: Base before try 1, doubled per further try,
// never more than Max.
type Policy struct {
	// Base is the delay for try 1. Zero or less means no delay at all.
	Base time.Duration
	// Max caps every delay. Zero or less means no cap (but a delay never
	// overflows: it stops at math.MaxInt64).
	Max time.Duration
	// Jitter draws the delay uniformly from the upper half of the doubled,
	// capped value ([d-d/2, d]), so callers that failed together do not
	// retry together.
	Jitter bool
}

// Delay is the delay for try n, counted from 1 (n below 1 counts as 1):
// Base doubled n-1 times, capped at Max, jittered if the policy says so.
// It takes at most 63 doublings whatever n is, and never overflows.
func (p Policy) Delay(n int) time.Duration {
	if p.Base <= 0 {
		return 0
	}
	ceiling := p.Max
	if ceiling <= 0 {
		ceiling = math.MaxInt64
	}
	d := min(p.Base, ceiling)
	for i := 1; i < n && d < ceiling; i++ {
		if d > ceiling/2 {
			d = ceiling
			break
		}
		d *= 2
	}
	if p.Jitter {
		half := d / 2
		d = d - half + rand.N(half+1)
	}
	return d
}

// DelayN is Delay for a count that is a uint64, such as a JetStream
// message's NumDelivered.
func (p Policy) DelayN(n uint64) time.Duration {
	return p.Delay(int(min(n, math.MaxInt32)))
}

// Sleep waits for d, or until ctx ends, whichever comes first; it returns
// ctx.Err() in the second case. A d of zero or less returns at once (nil
// unless ctx has already ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
