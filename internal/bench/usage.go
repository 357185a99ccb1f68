package bench

import (
	"runtime/metrics"
	"time"
)

// usage is what the process has used so far: CPU time and heap
// allocations (the embedded server's included).
type usage struct {
	cpu           time.Duration
	allocs, bytes uint64
}

// The runtime's cumulative heap allocation counters.
const (
	allocsMetric = "/gc/heap/allocs:objects"
	bytesMetric  = "/gc/heap/allocs:bytes"
)

// measure reads the process's usage now.
func measure() usage {
	s := []metrics.Sample{{Name: allocsMetric}, {Name: bytesMetric}}
	metrics.Read(s)
	u := usage{cpu: processCPU()}
	if s[0].Value.Kind() == metrics.KindUint64 {
		u.allocs = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		u.bytes = s[1].Value.Uint64()
	}
	return u
}

// since is the usage from u to now.
func (u usage) since() usage {
	now := measure()
	return usage{cpu: now.cpu - u.cpu, allocs: now.allocs - u.allocs, bytes: now.bytes - u.bytes}
}
