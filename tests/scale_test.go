package tests

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/subjects"
)

// stop signals the process and returns its exit error once it exited.
func (p *proc) stop(sig syscall.Signal, d time.Duration) error {
	p.signal(sig)
	return p.wait(d)
}

// connectBundle connects a bundle to servers that run as child processes.
func connectBundle(t *testing.T, url string) *bundle {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return &bundle{t: t, url: url, nc: nc, js: js, names: subjects.MustNames("drover")}
}

// publishAsync publishes requests as producer.Publish does (producer.Msg),
// without waiting for each PubAck before the next, and waits for all of them.
func (b *bundle) publishAsync(reqs []subjects.TaskRequest) {
	b.t.Helper()
	futures := make([]jetstream.PubAckFuture, 0, len(reqs))
	for _, r := range reqs {
		msg, err := producer.Msg(b.names, subjects.DefaultQueue, r)
		require.NoError(b.t, err)
		f, err := b.js.PublishMsgAsync(msg)
		require.NoError(b.t, err)
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			require.NoError(b.t, err)
		case <-time.After(30 * time.Second):
			b.t.Fatal("no PubAck within 30s")
		}
	}
}

// Scenario: three worker processes share 3,000 tasks on one server. Each
// does a share, and every task completes exactly once.
func TestScaleThreeWorkersShare(t *testing.T) {
	t.Parallel()
	b := setup(t)
	workers := []string{"w1", "w2", "w3"}
	for _, id := range workers {
		b.startProc("--worker-id", id)
	}
	const n = 3000
	reqs := make([]subjects.TaskRequest, n)
	for i := range reqs {
		reqs[i] = task("wf-scale", fmt.Sprintf("T%d", i))
	}
	start := time.Now()
	after, err := producer.AuditLastSeq(context.Background(), b.js, b.names)
	require.NoError(t, err)
	b.publishAsync(reqs)
	got := b.waitTerminal("wf-scale", after, n)
	elapsed := time.Since(start)
	require.Len(t, got, n)

	share := map[string]int{}
	for id, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
		share[ev.Worker]++
	}
	b.quiet("wf-scale", n)
	t.Logf("%d tasks in %s (race detector on) by worker: %v", n, elapsed.Round(time.Millisecond), share)
	require.Len(t, share, len(workers), "tasks done by: %v", share)
	for _, id := range workers {
		// A fair share is a third; each must do at least a tenth.
		require.GreaterOrEqual(t, share[id], n/10, "worker %s did %d of %d (%v)", id, share[id], n, share)
	}
}

// scaleEnv turns on TestScaleThroughput, a measurement of about a minute
// and a half that checks nothing TestScaleServerAndWorkers does not.
const scaleEnv = "DROVER_SCALE"

// Scenario: a `drover server` process and two worker processes, built
// without the race detector as TestScaleThroughput runs them, complete
// every task exactly once, and all three exit cleanly on SIGTERM: the
// correctness part of the throughput measurement, at a size the suite
// affords.
func TestScaleServerAndWorkers(t *testing.T) {
	t.Parallel()
	throughputRun(t, 2, 200)
}

// Throughput with 1, 2 and 3 worker processes, each run on a fresh server
// process, with binaries built without the race detector. Every role of the
// sim runner answers at once, so this measures Drover and NATS: per task
// one work-queue message, five audit events, state writes by compare-and-set,
// three cache lookups and writes. The configurations take turns, three
// rounds, and the table shows each one's median, so a burst of load from
// elsewhere on the machine does not favour one of them. Runs alone (not
// parallel), and only with DROVER_SCALE=1 (`make scale`): it is a
// measurement, not a check the suite needs.
func TestScaleThroughput(t *testing.T) {
	if os.Getenv(scaleEnv) != "1" {
		t.Skipf("throughput measurement: set %s=1 to run it (make scale)", scaleEnv)
	}
	const tasks, rounds = 1000, 3
	runs := map[int][]time.Duration{}
	for range rounds {
		for workers := 1; workers <= 3; workers++ {
			runs[workers] = append(runs[workers], throughputRun(t, workers, tasks))
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "throughput: %d sim tasks per run, median of %d runs, one `drover server` (--sync always), workers at --concurrency 16, %d CPUs (%s/%s), no race detector\n",
		tasks, rounds, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&sb, "| workers | median time | tasks/s | vs 1 worker | runs |\n|---|---|---|---|---|\n")
	var base float64
	for workers := 1; workers <= 3; workers++ {
		d := runs[workers]
		slices.Sort(d)
		med := d[len(d)/2]
		rate := float64(tasks) / med.Seconds()
		if workers == 1 {
			base = rate
		}
		var all []string
		for _, x := range d {
			all = append(all, x.Round(10*time.Millisecond).String())
		}
		fmt.Fprintf(&sb, "| %d | %s | %.0f | %.2fx | %s |\n", workers, med.Round(time.Millisecond), rate, rate/base, strings.Join(all, ", "))
	}
	t.Log("\n" + sb.String())
}

// throughputRun starts a server and workers, submits tasks and returns the
// time from the first publish to the last terminal event.
func throughputRun(t *testing.T, workers, tasks int) time.Duration {
	t.Helper()
	bin := plainBinary(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := spawnBin(t, bin, "server", "--listen", addr, "--data", t.TempDir(), "--log-format", "json")
	srv.waitStarted(60 * time.Second)
	b := connectBundle(t, "nats://"+addr)
	var procs []*proc
	for i := range workers {
		p := spawnBin(t, bin, "serve", "--nats-url", b.url, "--http", "", "--log-format", "json",
			"--worker-id", fmt.Sprintf("tp%d-%d", workers, i))
		p.waitStarted(60 * time.Second)
		procs = append(procs, p)
	}
	wf := fmt.Sprintf("wf-tp%d", workers)
	reqs := make([]subjects.TaskRequest, tasks)
	for i := range reqs {
		reqs[i] = task(wf, fmt.Sprintf("T%d", i))
	}
	after, err := producer.AuditLastSeq(context.Background(), b.js, b.names)
	require.NoError(t, err)
	start := time.Now()
	b.publishAsync(reqs)
	got := b.waitTerminal(wf, after, tasks)
	elapsed := time.Since(start)
	for id, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
	}
	b.quiet(wf, tasks)
	for _, p := range append(procs, srv) {
		require.NoError(t, p.stop(syscall.SIGTERM, 60*time.Second))
	}
	return elapsed
}
