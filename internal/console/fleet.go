package console

import (
	"context"
	"sync"
	"time"

	"github.com/droverhq/drover/internal/status"
	"github.com/droverhq/drover/internal/table"
	"github.com/droverhq/drover/subjects"
)

// Sparkline geometry: sparkBuckets buckets of sparkBucket each.
const (
	sparkBuckets = 30
	sparkBucket  = 10 * time.Second
	// fleetEvery is the least time between two fleet snapshots; a snapshot
	// is taken only after audit events arrived (or on a page's request).
	fleetEvery = 2 * time.Second
)

// fleet holds the last fleet snapshot and the throughput of finished
// tasks, counted from the audit stream.
type fleet struct {
	mu      sync.Mutex
	report  status.Report
	have    bool
	err     string
	buckets [sparkBuckets]int
	at      time.Time // start of the last bucket
	dirty   chan struct{}
	now     func() time.Time
}

func newFleet() *fleet {
	return &fleet{dirty: make(chan struct{}, 1), now: time.Now}
}

// event counts one audit event and asks for a new snapshot.
func (f *fleet) event(et subjects.EventType) {
	if et == subjects.EventTaskCompleted || et == subjects.EventTaskFailed {
		f.mu.Lock()
		f.roll()
		f.buckets[sparkBuckets-1]++
		f.mu.Unlock()
	}
	select {
	case f.dirty <- struct{}{}:
	default:
	}
}

// roll shifts the buckets to now; f.mu is held.
func (f *fleet) roll() {
	now := f.now()
	if f.at.IsZero() {
		f.at = now.Truncate(sparkBucket)
		return
	}
	n := int(now.Sub(f.at) / sparkBucket)
	if n <= 0 {
		return
	}
	if n >= sparkBuckets {
		f.buckets = [sparkBuckets]int{}
	} else {
		copy(f.buckets[:], f.buckets[n:])
		for i := sparkBuckets - n; i < sparkBuckets; i++ {
			f.buckets[i] = 0
		}
	}
	f.at = f.at.Add(time.Duration(n) * sparkBucket)
}

// spark returns the buckets, oldest first.
func (f *fleet) spark() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roll()
	out := make([]int, sparkBuckets)
	copy(out, f.buckets[:])
	return out
}

// snapshot returns the last report; ok is false before the first one.
func (f *fleet) snapshot() (status.Report, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.report, f.err, f.have
}

func (f *fleet) set(r status.Report, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.report, f.have, f.err = r, true, ""
	if err != nil {
		f.err = err.Error()
	}
}

// run takes a snapshot at start and after each burst of events, at most
// one per fleetEvery, and pushes it.
func (f *fleet) run(ctx context.Context, collect func(context.Context) (status.Report, error), push func(any)) {
	take := func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := collect(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		f.set(r, err)
		push(fleetItem(r, f.spark()))
	}
	take()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.dirty:
		}
		t.Reset(fleetEvery)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		take()
	}
}

// fleetItem is the pushed form of a snapshot: what the fleet page updates.
func fleetItem(r status.Report, spark []int) map[string]any {
	q := map[string]map[string]any{}
	for _, x := range r.Queues {
		q[x.Name] = map[string]any{"pending": x.Pending, "in_flight": x.InFlight, "redelivered": x.Redelivered, "dead": x.DeadLettered}
	}
	wk := map[string]map[string]any{}
	for _, x := range r.Workers {
		wk[x.ServiceID] = map[string]any{"in_flight": x.InFlight, "completed": x.Tasks.Completed, "failed": x.Tasks.Failed,
			"uptime": fmtDuration(time.Duration(x.UptimeS * float64(time.Second)))}
	}
	return map[string]any{"k": "f", "q": q, "wk": wk, "sp": spark, "am": r.Audit.Messages, "ab": table.Bytes(r.Audit.Bytes),
		"hr": hitRatio(r.Cache), "ce": r.Cache.Entries}
}
