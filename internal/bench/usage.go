package bench

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Usage is what the process has used so far: CPU time, heap allocations
// and garbage collections (the embedded server's included).
type Usage struct {
	cpu                time.Duration
	allocs, bytes, gcs uint64
}

// The runtime's cumulative heap allocation and collection counters.
const (
	allocsMetric = "/gc/heap/allocs:objects"
	bytesMetric  = "/gc/heap/allocs:bytes"
	gcsMetric    = "/gc/cycles/total:gc-cycles"
)

// MeasureUsage reads the process's usage now.
func MeasureUsage() Usage {
	s := []metrics.Sample{{Name: allocsMetric}, {Name: bytesMetric}, {Name: gcsMetric}}
	metrics.Read(s)
	u := Usage{cpu: processCPU()}
	for i, dst := range []*uint64{&u.allocs, &u.bytes, &u.gcs} {
		if s[i].Value.Kind() == metrics.KindUint64 {
			*dst = s[i].Value.Uint64()
		}
	}
	return u
}

// Since is the usage from u to now.
func (u Usage) Since() Usage {
	now := MeasureUsage()
	return Usage{cpu: now.cpu - u.cpu, allocs: now.allocs - u.allocs, bytes: now.bytes - u.bytes, gcs: now.gcs - u.gcs}
}

// CollectHeap collects the heap, empties the embedded server's pools of
// message-block buffers and returns free memory to the system, so a timed
// phase starts from the memory every other one starts from. Without it a
// phase inherits what the one before it left:
//   - the heap it grew: the phases after the Drover phase ran 10,000 tasks
//     with about half its collections and a fifth of its page faults;
//   - the block buffers (256 KiB to 8 MiB each) the server pooled as the
//     phase before deleted or dropped its blocks: the minimal worker, run
//     after contract-ops, spent 12-16 µs per task in the server copying
//     messages into its blocks' caches where contract-ops and Drover, which
//     start from fresh memory, spent 56-74 µs, faulting its pages in.
//
// A pool drops what it holds after two collections without use, and a
// block's buffer reaches its pool by a cleanup that runs after the
// collection that finds the block's cache unreachable; drainCycles
// collections, each waiting for the cleanups it made due, leave none
// pooled, with one to spare for a cleanup that runs late.
func CollectHeap() {
	for range drainCycles {
		collectAndClean()
	}
	debug.FreeOSMemory()
}

// drainCycles is how many collections CollectHeap runs before it returns
// free memory to the system.
const drainCycles = 3

// cleanupWait bounds how long collectAndClean waits for a collection's
// cleanups: they run on the runtime's own goroutines, and a bench must not
// hang on them.
const cleanupWait = time.Second

// collectAndClean runs a collection and waits until the cleanups it made
// due have been run, up to cleanupWait: a marker's cleanup, due in the
// same collection, closes done.
func collectAndClean() {
	done := make(chan struct{})
	marker := new([64]byte) // larger than the allocator's tiny objects, which may never be cleaned up
	runtime.AddCleanup(marker, func(done chan struct{}) { close(done) }, done)
	runtime.KeepAlive(marker)
	runtime.GC()
	t := time.NewTimer(cleanupWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
