package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// run starts w until the test ends and waits until it fetches.
func run(t *testing.T, w *worker.Worker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, natstest.Recv(t, done, 30*time.Second)) })
	select {
	case <-w.Started():
	case err := <-done:
		t.Fatalf("worker stopped at start: %v", err)
	}
}

// Two workers of one queue with different flags: the second neither
// rewrites the shared consumer nor runs with its own flags. Its heartbeats
// go at a third of the consumer's ack wait, and its tasks fail after the
// consumer's max deliver, not its own.
func TestSecondWorkerRunsWithTheConsumersSettings(t *testing.T) {
	srv := natstest.Server(t, natstest.Sync(time.Second))
	names := subjects.MustNames(subjects.DefaultPrefix)
	ctx := context.Background()
	start := func(cs broker.ConsumerSettings) *worker.Worker {
		nc, err := nats.Connect(srv.ClientURL())
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		w, err := worker.New(nc, worker.Config{
			Concurrency: 2, Consumer: cs, FetchWait: 200 * time.Millisecond, Log: natstest.Quiet(),
			Runners:  runner.SimSet(runner.NewSim(runner.SimOptions{})),
			Pipeline: pipeline.Config{RetryBase: 10 * time.Millisecond, RetryMax: 10 * time.Millisecond},
		})
		require.NoError(t, err)
		run(t, w)
		return w
	}
	first := start(broker.ConsumerSettings{AckWait: 9 * time.Second, MaxDeliver: 3})
	second := start(broker.ConsumerSettings{AckWait: 3 * time.Second, MaxDeliver: 1})

	_, js := natstest.Connect(t, srv.ClientURL())
	cons, err := js.Consumer(ctx, names.TasksStream(), names.Consumer(subjects.DefaultQueue))
	require.NoError(t, err)
	info, err := cons.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, 9*time.Second, info.Config.AckWait, "the second worker did not rewrite the ack wait")
	require.Equal(t, 4, info.Config.MaxDeliver)
	for i, w := range []*worker.Worker{first, second} {
		// Started does not wait for the consume loop to read the
		// consumer's settings; wait for that, then check all of them.
		require.Eventually(t, func() bool { return w.Consumers()[0].Settings().AckWait == 9*time.Second },
			10*time.Second, 5*time.Millisecond, "worker %d follows the consumer's ack wait", i)
		s := w.Consumers()[0].Settings()
		require.Equal(t, 9*time.Second, s.AckWait, "worker %d", i)
		require.Equal(t, 3*time.Second, s.HeartbeatInterval(), "worker %d", i)
		require.Equal(t, 3, s.MaxDeliver, "worker %d", i)
	}

	// A task whose planner always errors fails on the consumer's last
	// allowed delivery, whichever worker runs it: the second worker's own
	// flag would have failed it on the first.
	after, err := producer.AuditLastSeq(ctx, js, names)
	require.NoError(t, err)
	req := subjects.TaskRequest{Workflow: "wf-md", ID: "T1", Scope: "s",
		Metadata: map[string]json.RawMessage{"sim": json.RawMessage(`{"fail": {"role": "planner", "times": -1}}`)}}
	_, err = producer.Publish(ctx, js, names, subjects.DefaultQueue, req)
	require.NoError(t, err)
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var term subjects.AuditEvent
	require.NoError(t, producer.FollowTerminal(fctx, js, names, "wf-md", after, func(tm producer.Terminal) bool {
		term = tm.Event
		return false
	}))
	require.Equal(t, subjects.EventTaskFailed, term.EventType)
	require.Equal(t, string(subjects.ReasonMaxDeliveries), term.Action)
	require.Equal(t, 2, count(t, js, names, "wf-md", subjects.EventTaskRetried), "two retries, then the third delivery fails it")
}

// count counts the audit events of a type in a workflow.
func count(t *testing.T, js jetstream.JetStream, names subjects.Names, workflow string, et subjects.EventType) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := 0
	require.NoError(t, audit.Replay(ctx, js, names, audit.Query{Workflow: workflow, Type: et}, func(r audit.Record) error {
		if r.Err != nil {
			return r.Err
		}
		n++
		return nil
	}))
	return n
}
