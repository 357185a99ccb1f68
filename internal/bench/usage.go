package bench

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// usage is what the process has used so far: CPU time, heap allocations
// and garbage collections (the embedded server's included).
type usage struct {
	cpu                time.Duration
	allocs, bytes, gcs uint64
}

// The runtime's cumulative heap allocation and collection counters.
const (
	allocsMetric = "/gc/heap/allocs:objects"
	bytesMetric  = "/gc/heap/allocs:bytes"
	gcsMetric    = "/gc/cycles/total:gc-cycles"
)

// measure reads the process's usage now.
func measure() usage {
	s := []metrics.Sample{{Name: allocsMetric}, {Name: bytesMetric}, {Name: gcsMetric}}
	metrics.Read(s)
	u := usage{cpu: processCPU()}
	for i, dst := range []*uint64{&u.allocs, &u.bytes, &u.gcs} {
		if s[i].Value.Kind() == metrics.KindUint64 {
			*dst = s[i].Value.Uint64()
		}
	}
	return u
}

// since is the usage from u to now.
func (u usage) since() usage {
	now := measure()
	return usage{cpu: now.cpu - u.cpu, allocs: now.allocs - u.allocs, bytes: now.bytes - u.bytes, gcs: now.gcs - u.gcs}
}

// collectHeap collects the heap and returns its free memory to the system, so
// a timed phase starts from the heap every other one starts from. Without
// it a phase inherits the heap the one before it grew: the phases after
// the Drover phase ran 10,000 tasks with about half its collections and a
// fifth of its page faults.
func collectHeap() { debug.FreeOSMemory() }
