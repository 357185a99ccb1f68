package audit_test

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
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// vfWorker runs a sim worker on an embedded server until the test ends and
// returns a client of that server.
func vfWorker(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv := natstest.Server(t, natstest.Sync(time.Second))
	_, js := natstest.Connect(t, srv.ClientURL())

	wnc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	w, err := worker.New(wnc, worker.Config{
		Concurrency: 8, FetchWait: time.Second, Log: natstest.Quiet(),
		Runners:  runner.SimSet(runner.NewSim(runner.SimOptions{})),
		Pipeline: pipeline.Config{RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, natstest.Recv(t, done, 30*time.Second))
		wnc.Close()
	})
	select {
	case <-w.Started():
	case err := <-done:
		t.Fatalf("worker stopped at start: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("worker did not start")
	}
	return js
}

// vfTask is a request of workflow "e2e" steered by sim controls.
func vfTask(id, sim string) subjects.TaskRequest {
	r := subjects.TaskRequest{Workflow: "e2e", ID: id, Scope: "do " + id, MaxAttempts: 2}
	if sim != "" {
		r.Metadata = map[string]json.RawMessage{"sim": json.RawMessage(sim)}
	}
	return r
}

// TestVerifyWorkerRecord runs 50 requests through a real worker: most
// complete (some after a judge rejection or implementer and judge
// failures), some fail (max_attempts, max_deliveries), one body lacks its scope,
// and one task is submitted again after it finished. The record a worker
// writes must verify clean, with the right counts.
func TestVerifyWorkerRecord(t *testing.T) {
	t.Parallel()
	js := vfWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var reqs []subjects.TaskRequest
	for i := range 40 {
		sim := ""
		switch i % 4 {
		case 1:
			sim = `{"judge_rejects":1}`
		case 2:
			sim = `{"fail":{"role":"implementer","times":1}}`
		case 3:
			sim = `{"fail":{"role":"judge","times":2}}`
		}
		reqs = append(reqs, vfTask(fmt.Sprintf("ok-%02d", i), sim))
	}
	for i := range 5 {
		reqs = append(reqs, vfTask(fmt.Sprintf("rejects-%d", i), `{"judge_rejects":5}`))
	}
	for i := range 4 {
		reqs = append(reqs, vfTask(fmt.Sprintf("broken-%d", i), `{"fail":{"role":"implementer","times":-1}}`))
	}
	for _, r := range reqs {
		_, err := producer.Publish(ctx, js, rdNames, subjects.DefaultQueue, r)
		require.NoError(t, err)
	}
	_, err := js.Publish(ctx, rdNames.TaskSubject(subjects.DefaultQueue), []byte(`{"id":"bad","workflow":"e2e"}`))
	require.NoError(t, err)
	terminals := vfWaitTerminals(t, ctx, js, 50)
	require.Equal(t, subjects.EventTaskRejected, terminals["bad"])

	// ok-00 again, under another message ID: rejected as a duplicate.
	dup, err := json.Marshal(reqs[0])
	require.NoError(t, err)
	msg := nats.NewMsg(rdNames.TaskSubject(subjects.DefaultQueue))
	msg.Header.Set(subjects.HeaderMsgID, "e2e/ok-00/again")
	msg.Data = dup
	_, err = js.PublishMsg(ctx, msg)
	require.NoError(t, err)
	vfWaitTerminals(t, ctx, js, 51)

	rep, err := audit.Verify(ctx, js, rdNames, audit.VerifyOptions{DLQ: true})
	require.NoError(t, err)
	require.True(t, rep.OK(), "violations: %v", rep.Violations)
	require.Equal(t, 49, rep.Tasks)
	require.Equal(t, 40, rep.Completed)
	require.Equal(t, 9, rep.Failed)
	require.Zero(t, rep.Open)
	require.Equal(t, 2, rep.Rejected)
	require.Equal(t, 11, rep.DLQEntries)
	require.True(t, rep.SeqChecked)

	one, err := audit.Verify(ctx, js, rdNames, audit.VerifyOptions{Workflow: "e2e", DLQ: true})
	require.NoError(t, err)
	require.True(t, one.OK(), "violations: %v", one.Violations)
	require.Equal(t, rep.Events, one.Events, "every event is of workflow e2e")
}

// TestVerifyPlannerRetryIsAccepted: a task whose planner fails on its first
// delivery must still have task_accepted as its first event.
func TestVerifyPlannerRetryIsAccepted(t *testing.T) {
	t.Parallel()
	js := vfWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, sim := range []string{`{"fail":{"role":"planner","times":1}}`, `{"fail":{"role":"planner","times":-1}}`} {
		_, err := producer.Publish(ctx, js, rdNames, subjects.DefaultQueue, vfTask(fmt.Sprintf("p-%d", i), sim))
		require.NoError(t, err)
	}
	vfWaitTerminals(t, ctx, js, 2)
	rep, err := audit.Verify(ctx, js, rdNames, audit.VerifyOptions{DLQ: true})
	require.NoError(t, err)
	require.True(t, rep.OK(), "violations: %v", rep.Violations)
	require.Equal(t, []int{2, 1, 1}, []int{rep.Tasks, rep.Completed, rep.Failed})
}

// vfWaitTerminals follows workflow e2e's terminal events from the start
// until n have arrived, and returns each task's last terminal type.
func vfWaitTerminals(t *testing.T, ctx context.Context, js jetstream.JetStream, n int) map[string]subjects.EventType {
	t.Helper()
	got := map[string]subjects.EventType{}
	count := 0
	err := producer.FollowTerminal(ctx, js, rdNames, "e2e", 0, func(tm producer.Terminal) bool {
		count++
		got[tm.Event.TaskID] = tm.Event.EventType
		return count < n
	})
	require.NoError(t, err, "waiting for %d terminal events, got %d", n, count)
	return got
}
