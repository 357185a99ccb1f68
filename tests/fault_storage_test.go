package tests

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/ops"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// gated is a runner whose calls wait until release is closed.
type gated struct {
	runner.Runner
	release <-chan struct{}
	started *atomic.Int64
}

func (g gated) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	g.started.Add(1)
	select {
	case <-g.release:
	case <-ctx.Done():
		return runner.Result{}, ctx.Err()
	}
	return g.Runner.Run(ctx, req)
}

// setupLimited is setup with a server whose JetStream may store at most
// maxStore bytes on disk (max_file_store).
func setupLimited(t *testing.T, maxStore string) *bundle {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "limited.conf")
	require.NoError(t, os.WriteFile(conf, []byte("jetstream {\n  max_file_store: "+maxStore+"\n}\n"), 0o600))
	srv := natstest.Server(t, func(cfg *broker.EmbeddedConfig) { cfg.ConfigFile = conf })
	nc, js := natstest.Connect(t, srv.ClientURL())
	return &bundle{t: t, srv: srv, url: srv.ClientURL(), nc: nc, js: js, names: subjects.MustNames("drover")}
}

// fillStore fills the server's storage with a ballast stream until the
// server refuses a write, and returns the ballast's name.
func (b *bundle) fillStore() string {
	b.t.Helper()
	ctx := context.Background()
	name := "BALLAST"
	_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"ballast"}, Storage: jetstream.FileStorage})
	require.NoError(b.t, err)
	chunk := make([]byte, 256<<10)
	for i := 0; ; i++ {
		_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: "ballast", Data: chunk})
		if err != nil {
			var api *jetstream.APIError
			require.ErrorAs(b.t, err, &api, "ballast %d: %v", i, err)
			b.t.Logf("storage full after %d KiB of ballast: %v", i*256, err)
			return name
		}
		require.Less(b.t, i, 10_000)
	}
}

// Row 15: the server's storage (max_file_store) fills up while tasks run.
// Every write is refused (the state writes first), so no task completes or
// fails during the outage and nothing goes to the DLQ; the refusals are
// logged with the server's "insufficient resources". Each delivery is held
// and retried in place (its claim kept by heartbeats), so the outage, here
// longer than the task's five deliveries would last as naks, spends no
// delivery. Once the ballast is deleted, every task completes once, on its
// first delivery. Meanwhile /readyz says "storage full" and
// drover_store_full is 1; both clear once writes are stored again.
func TestFaultStorageFull(t *testing.T) {
	t.Parallel()
	b := setupLimited(t, "32MB")
	logs := &cliBuffer{}
	sim := runner.NewSim(runner.SimOptions{})
	release := make(chan struct{})
	runners := runner.SimSet(sim)
	var started atomic.Int64
	runners.Implementer = gated{sim, release, &started}
	m := ops.NewMetrics()
	// The live stream's MaxBytes (256 MiB by default) is reserved against
	// the server's 32 MB at provisioning: it gets 1 MiB here.
	w := b.startWorker(worker.Config{Concurrency: 4, Runners: runners, Log: slog.New(slog.NewJSONHandler(logs, nil)), Metrics: m,
		Streams:  broker.Settings{LiveMaxBytes: 1 << 20},
		Consumer: broker.ConsumerSettings{AckWait: 2 * time.Second, MaxDeliver: 5},
		Pipeline: pipeline.Config{RetryBase: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond}})
	var reqs []subjects.TaskRequest
	for i := range 4 {
		reqs = append(reqs, task("wf-full", fmt.Sprintf("T%d", i)))
	}
	after := b.submit(reqs...)
	require.Eventually(t, func() bool { return started.Load() >= 4 }, 30*time.Second, 10*time.Millisecond)
	ballast := b.fillStore()
	full := time.Now()
	close(release) // the implementers return into a full store
	// Every task has had more writes refused than it has deliveries.
	require.Eventually(t, func() bool { return strings.Count(logs.String(), "insufficient resources") >= 4*7 }, 60*time.Second, 20*time.Millisecond, "logs:\n%s", logs)
	for _, ev := range b.events("wf-full") {
		require.NotEqual(t, subjects.EventTaskCompleted, ev.EventType, "completed while the store is full")
		require.NotEqual(t, subjects.EventTaskFailed, ev.EventType, "failed for a full store")
	}
	require.Empty(t, b.dlq())
	// Operators see it: /readyz's reason and drover_store_full.
	require.ErrorIs(t, w.CheckReady(), worker.ErrStoreFull)
	require.Equal(t, 1.0, metric(t, m.Registry, "drover_store_full"))
	require.NoError(t, b.js.DeleteStream(context.Background(), ballast))
	freed := time.Now()
	got := b.waitTerminal("wf-full", after, 4)
	for id, ev := range got {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
	}
	t.Logf("storage full for %s; all tasks completed %s after space was freed", freed.Sub(full).Round(10*time.Millisecond), time.Since(freed).Round(10*time.Millisecond))
	require.Eventually(t, func() bool { return w.CheckReady() == nil }, 10*time.Second, 10*time.Millisecond, "ready once writes are stored again")
	require.Zero(t, metric(t, m.Registry, "drover_store_full"))
	b.quiet("wf-full", 4)
	require.EqualValues(t, 4, consumerInfo(t, b).Delivered.Consumer, "the outage spent no delivery")
}
