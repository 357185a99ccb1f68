package benchlab

import (
	"slices"
	"sync"
	"time"

	"github.com/droverhq/drover/internal/bench"
)

// OpStat is what one kind of JetStream operation cost in a raw phase:
// how often a task made it and how long it took, from the call to the
// answer (for an asynchronous publish, from the send to its PubAck).
type OpStat struct {
	Op      string        `json:"op"`
	PerTask float64       `json:"per_task"`
	Mean    time.Duration `json:"-"`
	P50     time.Duration `json:"-"`
	P99     time.Duration `json:"-"`
	MeanMS  float64       `json:"mean_ms"`
	P50MS   float64       `json:"p50_ms"`
	P99MS   float64       `json:"p99_ms"`
	// Waited says whether the task waited for the answer right away (on
	// its critical path) or overlapped it with other work.
	Waited bool `json:"waited"`
}

// opTimes collects the latencies of a raw phase's operations, by kind, in
// the order the kinds first appear.
type opTimes struct {
	mu     sync.Mutex
	order  []string
	d      map[string][]time.Duration
	waited map[string]bool
}

func newOpTimes() *opTimes {
	return &opTimes{d: map[string][]time.Duration{}, waited: map[string]bool{}}
}

// since records one op that started at start and was waited for at once.
func (o *opTimes) since(op string, start time.Time) { o.add(op, true, time.Since(start)) }

// overlapped records one op that started at start and ran while the task
// did other work.
func (o *opTimes) overlapped(op string, start time.Time) { o.add(op, false, time.Since(start)) }

func (o *opTimes) add(op string, waited bool, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.d[op]; !ok {
		o.order = append(o.order, op)
		o.waited[op] = waited
	}
	o.d[op] = append(o.d[op], d)
}

// stats summarises the ops over n tasks.
func (o *opTimes) stats(n int) []OpStat {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]OpStat, 0, len(o.order))
	for _, op := range o.order {
		d := slices.Clone(o.d[op])
		slices.Sort(d)
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		s := OpStat{Op: op, Waited: o.waited[op], P50: bench.Percentile(d, 50), P99: bench.Percentile(d, 99)}
		if len(d) > 0 {
			s.Mean = sum / time.Duration(len(d))
		}
		if n > 0 {
			s.PerTask = float64(len(d)) / float64(n)
		}
		s.MeanMS, s.P50MS, s.P99MS = bench.MS(s.Mean), bench.MS(s.P50), bench.MS(s.P99)
		out = append(out, s)
	}
	return out
}
