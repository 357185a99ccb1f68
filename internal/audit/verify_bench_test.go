package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// TestVerifyMillion writes 1,000,000 valid events (200,000 tasks of five
// events, 1,000 tasks interleaved at a time, as concurrent workers write
// them) and times Verify over them. It runs only with DROVER_VERIFY_1M=1;
// DROVER_VERIFY_TASKS=N changes the task count,
// DROVER_VERIFY_PROFILE=FILE writes a CPU profile of Verify, and
// DROVER_VERIFY_URL uses a fresh server in another process instead of an
// embedded one.
func TestVerifyMillion(t *testing.T) {
	if os.Getenv("DROVER_VERIFY_1M") != "1" {
		t.Skip("set DROVER_VERIFY_1M=1 to verify a stream of 1,000,000 events")
	}
	tasks := 200_000
	if v := os.Getenv("DROVER_VERIFY_TASKS"); v != "" {
		_, err := fmt.Sscan(v, &tasks)
		require.NoError(t, err)
	}
	url := os.Getenv("DROVER_VERIFY_URL") // a fresh server in another process
	if url == "" {
		url = natstest.Server(t, natstest.Sync(time.Minute)).ClientURL()
	}
	_, js := natstest.Connect(t, url, jetstream.WithPublishAsyncMaxPending(16384))
	ctx := context.Background()
	natstest.Provision(t, ctx, js, broker.Settings{Names: rdNames})

	start := time.Now()
	n := vfWriteMillion(t, js, tasks)
	t.Logf("wrote %d events in %s", n, time.Since(start).Round(time.Millisecond))

	if path := os.Getenv("DROVER_VERIFY_PROFILE"); path != "" {
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }() // a profile: the test reads what it needs
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	rep, err := audit.Verify(ctx, js, rdNames, audit.VerifyOptions{DLQ: true})
	close(stop)
	natstest.Recv(t, sampled, 30*time.Second)
	require.NoError(t, err)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	require.True(t, rep.OK(), "violations: %v", rep.Violations)
	require.Equal(t, uint64(n), rep.Events)
	require.Equal(t, tasks, rep.Completed)
	t.Logf("verified %d events of %d tasks in %s: %.0f events/s; heap in use %d MiB before, peak %d MiB (server included unless DROVER_VERIFY_URL), %d MiB allocated",
		rep.Events, rep.Tasks, rep.Duration.Round(time.Millisecond), rep.EventsPerSec,
		before.HeapInuse>>20, peak.Load()>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
}

// vfWriteMillion publishes tasks*5 events asynchronously, with headers and
// bodies as a worker writes them (each linked to its task's previous one,
// Drover-Prev), and returns how many it wrote.
func vfWriteMillion(t *testing.T, js jetstream.JetStream, tasks int) int {
	t.Helper()
	steps := []vf{vAcc(""), vPlan(""), vImpl("", 1), vJudge("", 1, subjects.VerdictApprove), vDone("", 1)}
	pub := audit.NewPublisher(js, rdNames)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const inFlight = 1000
	n := 0
	links := make(map[string]string, inFlight)
	for base := 0; base < tasks; base += inFlight {
		clear(links)
		for _, s := range steps {
			for k := base; k < min(base+inFlight, tasks); k++ {
				wf := fmt.Sprintf("wf-%03d", k%500)
				ev := rdEvent(wf, fmt.Sprintf("T%06d", k), s.att, s.actor, s.et, s.n, t0.Add(time.Duration(n)*time.Millisecond))
				ev.Action, ev.Reasoning = s.action, "a sentence or two of reasoning, as a model would write it"
				ev.Output = json.RawMessage(`{"summary":"what the role produced, in a few words"}`)
				oe, err := subjects.EncodeEvent(&ev)
				require.NoError(t, err)
				msg := pub.Msg(oe, "")
				prev := links[ev.TaskID]
				msg.Header[subjects.HeaderPrev] = []string{prev}
				links[ev.TaskID] = audit.LinkHex(msg.Subject, prev, msg.Data)
				_, err = js.PublishMsgAsync(msg)
				require.NoError(t, err)
				n++
			}
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				t.Fatal("publishing the events took too long")
			}
		}
	}
	return n
}
