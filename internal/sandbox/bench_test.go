package sandbox

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/droverhq/drover/internal/sandbox/sandboxtest"
)

// BenchmarkExecStart measures a process start: `true` run plainly (as
// ModeNone runs it) and under bubblewrap, in the same run, reporting the
// p50 and p99 of each in ms:
//
//	go test -run '^$' -bench ExecStart -benchtime 300x ./internal/sandbox/
func BenchmarkExecStart(b *testing.B) {
	sandboxtest.Require(b)
	work, home := tempDir(b), tempDir(b)
	spec := Spec{Paths: Paths{Work: work, Home: home}, Env: []string{"PATH=/usr/bin:/bin"}}
	for _, mode := range []string{ModeNone, ModeBubblewrap} {
		s, err := New(Config{Mode: mode})
		if err != nil {
			b.Fatal(err)
		}
		name := map[string]string{ModeNone: "Plain", ModeBubblewrap: "Sandbox"}[mode]
		b.Run(name, func(b *testing.B) {
			took := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				cmd, err := s.Command(context.Background(), spec, []string{"/usr/bin/true"})
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			reportPercentiles(b, took)
		})
	}
}

// reportPercentiles adds the p50 and p99 of took, in ms, to b's report.
func reportPercentiles(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	at := func(q float64) float64 {
		return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
