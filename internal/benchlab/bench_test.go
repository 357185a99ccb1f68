package benchlab

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/bench"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
)

// The lab's settings, after the package on go test's command line:
//
//	go test -run '^$' -bench . -benchtime 1000x ./internal/benchlab/ -lab.sync 2m
var (
	labSync = flag.String("lab.sync", "always", `the embedded server's fsync: "always" (before every ack) or an interval such as 2m`)
	labPool = flag.Int("lab.pool", bench.DefaultConcurrency, "the pool size of Drover's worker and of the raw phases")
	labURL  = flag.String("lab.url", "", "a NATS server to measure instead of the embedded one (no credentials)")
)

// labServer is the one server every benchmark of the process measures,
// so their figures compare: the embedded server started on first use, or
// -lab.url.
var labServer struct {
	once sync.Once
	url  string
	err  error
	stop func()
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if labServer.stop != nil {
		labServer.stop()
	}
	printShares(os.Stdout)
	if code == 0 {
		// goleak.VerifyTestMain, after the shared server has stopped.
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left behind: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// rates keeps each benchmark's tasks/s, one per timed run (-count), for
// the shares TestMain prints.
var rates struct {
	sync.Mutex
	of map[string][]float64
}

// printShares prints Drover's median tasks/s as a share of each other
// phase's median, when both ran: "drover: 0.21 of Floor" is drover bench's
// throughput as a share of the honest floor on the same server.
func printShares(w io.Writer) {
	rates.Lock()
	defer rates.Unlock()
	median := func(v []float64) float64 {
		v = slices.Sorted(slices.Values(v))
		return (v[(len(v)-1)/2] + v[len(v)/2]) / 2
	}
	drover := rates.of["Drover"]
	if len(drover) == 0 {
		return
	}
	for _, name := range []string{"Floor", "ContractOps", "MinimalWorker"} {
		if other := rates.of[name]; len(other) > 0 {
			fmt.Fprintf(w, "drover: %.3f of %s (median tasks/s %.0f of %.0f, %d and %d runs)\n",
				median(drover)/median(other), name, median(drover), median(other), len(drover), len(other))
		}
	}
}

// serverURL starts the lab's server once and returns its URL.
func serverURL(b *testing.B) string {
	b.Helper()
	labServer.once.Do(func() {
		if *labURL != "" {
			labServer.url = *labURL
			return
		}
		interval, err := broker.ParseSync(*labSync)
		if err != nil {
			labServer.err = fmt.Errorf("-lab.sync: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "drover-benchlab-")
		if err != nil {
			labServer.err = err
			return
		}
		srv, err := broker.StartEmbedded(broker.EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: dir, Sync: interval, ServerName: "drover-benchlab"})
		if err != nil {
			labServer.err = err
			_ = os.RemoveAll(dir)
			return
		}
		labServer.url = srv.ClientURL()
		labServer.stop = func() { srv.Shutdown(); _ = os.RemoveAll(dir) }
	})
	if labServer.err != nil {
		b.Fatal(labServer.err)
	}
	return labServer.url
}

// labConfig is a phase of n tasks with the lab's pool.
func labConfig(n int) Config {
	return withDefaults(Config{Tasks: n, Concurrency: *labPool, Log: natstest.Quiet()})
}

// warmUpTasks is the size of the untimed warm-up before each raw phase:
// the first phase after another runs while the server still removes the
// streams of the one before.
const warmUpTasks = 300

// BenchmarkDrover is drover bench's Drover phase on the lab's server: b.N
// cold one-round sim tasks through a real worker, each timed from its
// submit to its terminal event read from the audit stream.
func BenchmarkDrover(b *testing.B) {
	url := serverURL(b)
	cfg := labConfig(b.N)
	cfg.URL = url
	rep, err := bench.Run(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	report(b, Result{Phase: rep.Drover, WritesPerTask: rep.Writes.PerTask})
}

// BenchmarkFloor is the honest floor: the least per-task work a worker
// could do with plain JetStream, overlapped (floor.go).
func BenchmarkFloor(b *testing.B) { benchPhase(b, runFloor) }

// BenchmarkContractOps is contract-ops, overlapped (ops.go).
func BenchmarkContractOps(b *testing.B) { benchPhase(b, runOps) }

// BenchmarkMinimalWorker is the minimal worker (work.go).
func BenchmarkMinimalWorker(b *testing.B) { benchPhase(b, runMinimal) }

// BenchmarkContractOpsCached is contract-ops for fully cached tasks
// (runOpsCached): the floor of drover bench's cached re-run.
func BenchmarkContractOpsCached(b *testing.B) { benchPhase(b, runOpsCached) }

// benchPhase runs an untimed warm-up and then a raw phase of b.N tasks.
func benchPhase(b *testing.B, run func(context.Context, Config, string) (Result, error)) {
	url := serverURL(b)
	ctx := context.Background()
	if _, err := run(ctx, labConfig(min(b.N, warmUpTasks)), url); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	res, err := run(ctx, labConfig(b.N), url)
	if err != nil {
		b.Fatal(err)
	}
	report(b, res)
}

// report sets a phase's figures as the benchmark's: ns/op is the phase's
// elapsed time per task (first submit to last end, over a pool working in
// parallel, so 1e9 / ns/op is its tasks/s), heap-allocs/op and heap-B/op
// the process's per task; the per-operation breakdown goes to the log. A
// run of at least warmUpTasks tasks counts towards the shares TestMain
// prints.
func report(b *testing.B, res Result) {
	b.Helper()
	if res.Completed != b.N || res.Failed != 0 {
		b.Fatalf("%d of %d tasks completed, %d failed", res.Completed, b.N, res.Failed)
	}
	b.ReportMetric(float64(res.Elapsed.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(res.TasksPerSec, "tasks/s")
	b.ReportMetric(bench.MS(res.P50), "p50-ms")
	b.ReportMetric(bench.MS(res.P99), "p99-ms")
	b.ReportMetric(res.CPUPerTaskUS, "cpu-us/op")
	b.ReportMetric(res.AllocsPerTask, "heap-allocs/op")
	b.ReportMetric(res.AllocBytesPerTask, "heap-B/op")
	b.ReportMetric(res.WritesPerTask, "writes/op")
	if b.N < warmUpTasks { // the framework's first, one-task run
		return
	}
	name := strings.TrimPrefix(b.Name(), "Benchmark")
	name, _, _ = strings.Cut(name, "-")
	rates.Lock()
	if rates.of == nil {
		rates.of = map[string][]float64{}
	}
	rates.of[name] = append(rates.of[name], res.TasksPerSec)
	rates.Unlock()
	if len(res.Ops) == 0 {
		return
	}
	var out strings.Builder
	tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tper task\tmean\tp50\tp99\t\t")
	for _, o := range res.Ops {
		how := "overlapped"
		if o.Waited {
			how = "waited"
		}
		fmt.Fprintf(tw, "%-24s\t%.0f\t%s\t%s\t%s\t%s\t\n", o.Op, o.PerTask, o.Mean.Round(time.Microsecond),
			o.P50.Round(time.Microsecond), o.P99.Round(time.Microsecond), how)
	}
	_ = tw.Flush()
	b.Logf("per operation (waited: on the task's critical path; overlapped: in flight with other work):\n%s", out.String())
}
