// Package benchlab is the benchmark lab: Drover's throughput next to what
// plain JetStream does on the same server, with none of Drover's code. It
// is not linked into the drover binary (internal/imports_test.go holds
// that); its benchmarks run with go test (bench_test.go, and
// docs/performance.md, "The lab").
//
//   - The floor (floor.go) does the least a worker could do for a task:
//     consume from a work-queue stream with a pool, one KV get and put, one
//     audit-like publish with a Nats-Msg-Id, an ack.
//   - Contract-ops (ops.go) performs, for each task, the JetStream
//     operations the wire contract asks of a Drover worker, with Drover's
//     sizes and headers: the ceiling of any implementation of the contract
//     on that server.
//   - The minimal worker (work.go) is contract-ops with each task's data
//     made for real by Drover's encoders and sim, but none of its pipeline.
//
// Each is "overlapped" as a careful hand-written worker overlaps its
// operations: asynchronous publishes and KV writes in flight together,
// waiting only where correctness needs the answer.
package benchlab

import (
	"io"
	"log/slog"

	"github.com/droverhq/drover/internal/bench"
	"github.com/droverhq/drover/subjects"
)

// Config is what a lab phase runs with: the bench's settings (Tasks,
// Concurrency, Options, Names, Timeout, Log).
type Config = bench.Config

// withDefaults fills what a lab phase needs and cfg leaves zero: the
// bench's defaults.
func withDefaults(cfg Config) Config {
	if cfg.Tasks <= 0 {
		cfg.Tasks = bench.DefaultTasks
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = bench.DefaultConcurrency
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = bench.DefaultTimeout
	}
	if cfg.Names == (subjects.Names{}) {
		cfg.Names = subjects.MustNames(bench.DefaultPrefix)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return cfg
}

// Result is what a lab phase measured: the bench's figures of a phase,
// the stored writes per task (the request included) and the per-operation
// breakdown.
type Result struct {
	bench.Phase
	WritesPerTask float64
	Ops           []OpStat
}
