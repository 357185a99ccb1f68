package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// bundle is one embedded server with a connection and the contract names.
type bundle struct {
	t     *testing.T
	srv   *broker.Embedded // nil when the server is a child process
	url   string
	nc    *nats.Conn
	js    jetstream.JetStream
	names subjects.Names
}

func setup(t *testing.T) *bundle {
	t.Helper()
	srv := natstest.Server(t, natstest.Sync(time.Second))
	nc, js := natstest.Connect(t, srv.ClientURL())
	return &bundle{t: t, srv: srv, url: srv.ClientURL(), nc: nc, js: js, names: subjects.MustNames("drover")}
}

// startWorker runs a worker until the test ends and waits until it fetches.
func (b *bundle) startWorker(cfg worker.Config) *worker.Worker {
	b.t.Helper()
	nc, err := nats.Connect(b.url)
	require.NoError(b.t, err)
	if cfg.Log == nil {
		cfg.Log = natstest.Quiet()
	}
	if cfg.FetchWait == 0 {
		cfg.FetchWait = time.Second
	}
	if cfg.Pipeline.RetryBase == 0 {
		cfg.Pipeline.RetryBase, cfg.Pipeline.RetryMax = 50*time.Millisecond, 200*time.Millisecond
	}
	b.t.Cleanup(nc.Close) // after the worker stopped: cleanups run last first
	w, err := worker.New(nc, cfg)
	require.NoError(b.t, err)
	stop, _ := runOwned(b.t, w)
	b.t.Cleanup(func() { require.NoError(b.t, stop()) })
	return w
}

// runOwned runs w until the returned stop is called; stop returns Run's
// error and may be called more than once, from any goroutine. done is
// closed when Run has returned. The test's cleanup stops it too.
func runOwned(t *testing.T, w *worker.Worker) (stop func() error, done <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	var result error
	go func() { result = w.Run(ctx); close(finished) }()
	stop = func() error {
		cancel()
		natstest.Recv(t, finished, 30*time.Second)
		return result
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case <-w.Started():
	case <-finished:
		t.Fatalf("worker stopped at start: %v", result)
	case <-time.After(20 * time.Second):
		t.Fatal("worker did not start")
	}
	return stop, finished
}

func simWorker(b *bundle, sim *runner.Sim, concurrency int) *worker.Worker {
	return b.startWorker(worker.Config{Concurrency: concurrency, Runners: runner.SimSet(sim)})
}

func task(wf, id string) subjects.TaskRequest {
	return subjects.TaskRequest{Workflow: wf, ID: id, Scope: "do " + id, Verification: "check " + id}
}

func withSim(r subjects.TaskRequest, sim string) subjects.TaskRequest {
	r.Metadata = map[string]json.RawMessage{"sim": json.RawMessage(sim)}
	return r
}

// submit publishes requests and returns the audit sequence before them.
func (b *bundle) submit(reqs ...subjects.TaskRequest) uint64 {
	b.t.Helper()
	ctx := context.Background()
	after, err := producer.AuditLastSeq(ctx, b.js, b.names)
	require.NoError(b.t, err)
	for _, r := range reqs {
		_, err := producer.Publish(ctx, b.js, b.names, "default", r)
		require.NoError(b.t, err)
	}
	return after
}

// waitTerminal waits for n terminal events of workflow after seq.
func (b *bundle) waitTerminal(workflow string, after uint64, n int) map[string]subjects.AuditEvent {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := map[string]subjects.AuditEvent{}
	count := 0
	err := producer.FollowTerminal(ctx, b.js, b.names, workflow, after, func(tm producer.Terminal) bool {
		count++
		got[tm.Event.TaskID] = tm.Event
		return count < n
	})
	if err != nil {
		for _, ev := range b.events(workflow) {
			if _, done := got[ev.TaskID]; !done {
				b.t.Logf("not terminal: %s attempt %d %s/%s %s %s", ev.TaskID, ev.Attempt, ev.Actor, ev.EventType, ev.Action, ev.Error)
			}
		}
	}
	require.NoError(b.t, err, "waiting for %d terminal events of %s, got %d", n, workflow, count)
	return got
}

// events returns every audit event of a workflow ("" for all), in order:
// a replay up to the last event present when it starts.
func (b *bundle) events(workflow string) []subjects.AuditEvent {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []subjects.AuditEvent
	err := audit.Replay(ctx, b.js, b.names, audit.Query{Workflow: workflow}, func(r audit.Record) error {
		require.NoError(b.t, r.Err)
		require.Equal(b.t, r.Event.EventID, r.Headers.Get("Nats-Msg-Id"))
		out = append(out, r.Event)
		return nil
	})
	require.NoError(b.t, err)
	return out
}

func (b *bundle) dlq() []*jetstream.RawStreamMsg {
	b.t.Helper()
	out, err := b.readDLQ()
	require.NoError(b.t, err)
	return out
}

// readDLQ is dlq without a test to fail, for Eventually callbacks.
func (b *bundle) readDLQ() ([]*jetstream.RawStreamMsg, error) {
	ctx := context.Background()
	s, err := b.js.Stream(ctx, b.names.DLQStream())
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			return nil, fmt.Errorf("DLQ message %d: %w", seq, err)
		}
		out = append(out, m)
	}
	return out, nil
}
