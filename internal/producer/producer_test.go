package producer_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var names = subjects.MustNames("drover")

type testBundle struct {
	t   *testing.T
	ctx context.Context
	js  jetstream.JetStream
	res *broker.Resources
	pub *audit.Publisher
}

// setup starts an embedded server with the contract's streams and buckets.
func setup(t *testing.T) *testBundle {
	t.Helper()
	_, _, js, res := natstest.Provisioned(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &testBundle{t: t, ctx: ctx, js: js, res: res, pub: audit.NewPublisher(js, names)}
}

func request(wf, id string) subjects.TaskRequest {
	return subjects.TaskRequest{Workflow: wf, ID: id, Scope: "do " + id}
}

// event publishes one audit event and returns its stream sequence.
func (tb *testBundle) event(wf, task string, et subjects.EventType) uint64 {
	tb.t.Helper()
	ev := &subjects.AuditEvent{
		EventID: subjects.EventID(wf, task, 1, subjects.ActorSystem, et, 0), EventType: et,
		WorkflowID: wf, TaskID: task, Actor: subjects.ActorSystem, Attempt: 1,
		Timestamp: time.Now().UTC(), Status: subjects.StatusSuccess, Worker: "test",
	}
	ack, err := tb.pub.PublishEvent(tb.ctx, ev, "", false, 0)
	require.NoError(tb.t, err)
	require.False(tb.t, ack.Duplicate)
	return ack.Seq
}

func TestPublishHeaders(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	req := request("board.T1", "T1/1")
	sub, err := producer.Publish(tb.ctx, tb.js, names, "default", req)
	require.NoError(t, err)
	require.Equal(t, producer.Submitted{Workflow: "board.T1", Task: "T1/1", Queue: "default", Seq: 1}, sub)

	m, err := tb.res.Tasks.GetMsg(tb.ctx, sub.Seq)
	require.NoError(t, err)
	require.Equal(t, "drover.tasks.default", m.Subject)
	require.Equal(t, "board=2ET1/T1=2F1", m.Header.Get("Nats-Msg-Id"))
	require.Equal(t, "1", m.Header.Get("Drover-Contract"))

	got, rerr := subjects.DecodeTask(m.Data, subjects.Limits{})
	require.Nil(t, rerr)
	require.Equal(t, req.ID, got.ID)
	require.Equal(t, req.Workflow, got.Workflow)
	require.Equal(t, req.Scope, got.Scope)
}

func TestPublishDuplicate(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	req := request("wf", "T1")
	first, err := producer.Publish(tb.ctx, tb.js, names, "default", req)
	require.NoError(t, err)
	require.False(t, first.Duplicate)

	second, err := producer.Publish(tb.ctx, tb.js, names, "default", req)
	require.NoError(t, err)
	require.True(t, second.Duplicate)
	require.Equal(t, first.Seq, second.Seq)

	info, err := tb.res.Tasks.Info(tb.ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, info.State.Msgs, "stored once")
}

func TestPublishRefusesInvalid(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	bad := []struct {
		queue string
		req   subjects.TaskRequest
		field string
	}{
		{"default", request("wf", "has space"), "id"},
		{"default", request("wf", ""), "id"},
		{"default", request("wf", "_"), "id"},
		{"default", request("bad\x00wf", "T1"), "workflow"},
		{"default", subjects.TaskRequest{Workflow: "wf", ID: "T1"}, "scope"},
		{"default", subjects.TaskRequest{Workflow: "wf", ID: "T1", Scope: "s", MaxAttempts: 11}, "max_attempts"},
		{"Bad.Queue", request("wf", "T1"), "queue"},
	}
	for _, c := range bad {
		_, err := producer.Publish(tb.ctx, tb.js, names, c.queue, c.req)
		require.Error(t, err, "%+v", c)
		require.Contains(t, err.Error(), c.field)
	}
	info, err := tb.res.Tasks.Info(tb.ctx)
	require.NoError(t, err)
	require.Zero(t, info.State.Msgs, "nothing was published")
}

func TestAuditLastSeq(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	seq, err := producer.AuditLastSeq(tb.ctx, tb.js, names)
	require.NoError(t, err)
	require.Zero(t, seq)

	tb.event("wf", "T1", subjects.EventTaskAccepted)
	last := tb.event("wf", "T1", subjects.EventTaskCompleted)
	seq, err = producer.AuditLastSeq(tb.ctx, tb.js, names)
	require.NoError(t, err)
	require.Equal(t, last, seq)

	_, err = producer.AuditLastSeq(tb.ctx, tb.js, subjects.MustNames("other"))
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
}

func TestFollowTerminal(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	// Before afterSeq: not delivered.
	tb.event("wf", "T0", subjects.EventTaskAccepted)
	tb.event("wf", "T0", subjects.EventTaskCompleted)
	after, err := producer.AuditLastSeq(tb.ctx, tb.js, names)
	require.NoError(t, err)

	tb.event("wf", "T1", subjects.EventTaskAccepted)  // not terminal
	tb.event("other", "T9", subjects.EventTaskFailed) // another workflow
	s1 := tb.event("wf", "T1", subjects.EventTaskCompleted)
	tb.event("wf", "T2", subjects.EventTaskAccepted)
	s2 := tb.event("wf", "T2", subjects.EventTaskFailed)
	s3 := tb.event("wf", "_", subjects.EventTaskRejected)
	s4 := tb.event("wf", "T3", subjects.EventTaskCancelled)

	type seen struct {
		task string
		et   subjects.EventType
		seq  uint64
	}
	var got []seen
	err = producer.FollowTerminal(tb.ctx, tb.js, names, "wf", after, func(tm producer.Terminal) bool {
		got = append(got, seen{tm.Event.TaskID, tm.Event.EventType, tm.Seq})
		return len(got) < 3
	})
	require.NoError(t, err)
	require.Equal(t, []seen{
		{"T1", subjects.EventTaskCompleted, s1},
		{"T2", subjects.EventTaskFailed, s2},
		{"_", subjects.EventTaskRejected, s3},
	}, got, "only terminal events of the workflow after afterSeq, until fn says stop")

	// From the start: everything terminal of the workflow; ctx ends the follow.
	ctx, cancel := context.WithCancel(tb.ctx)
	defer cancel()
	got = got[:0]
	err = producer.FollowTerminal(ctx, tb.js, names, "wf", 0, func(tm producer.Terminal) bool {
		got = append(got, seen{tm.Event.TaskID, tm.Event.EventType, tm.Seq})
		if tm.Seq == s4 {
			cancel()
		}
		return true
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, got, 5)
	require.Equal(t, seen{"T0", subjects.EventTaskCompleted, 2}, got[0])
	require.Equal(t, seen{"T3", subjects.EventTaskCancelled, s4}, got[4])
}

// The follower is delivered the terminal events' subjects only: a message
// on a task_accepted subject is never read, whatever its body says, and a
// task's other events cost the follower nothing.
func TestFollowTerminalReadsOnlyTerminalSubjects(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	after, err := producer.AuditLastSeq(tb.ctx, tb.js, names)
	require.NoError(t, err)
	body, err := json.Marshal(subjects.AuditEvent{EventType: subjects.EventTaskCompleted, WorkflowID: "wf", TaskID: "T5"})
	require.NoError(t, err)
	_, err = tb.js.Publish(tb.ctx, names.AuditSubject("wf", "T5", subjects.ActorSystem, subjects.EventTaskAccepted), body)
	require.NoError(t, err)
	seq := tb.event("wf", "T6", subjects.EventTaskCompleted)

	var got []string
	err = producer.FollowTerminal(tb.ctx, tb.js, names, "wf", after, func(tm producer.Terminal) bool {
		got = append(got, tm.Event.TaskID)
		return tm.Seq != seq
	})
	require.NoError(t, err)
	require.Equal(t, []string{"T6"}, got, "a body claiming to be terminal on another subject is not read")

}

func TestFollowTerminalWaitsForNewEvents(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	after, err := producer.AuditLastSeq(tb.ctx, tb.js, names)
	require.NoError(t, err)

	done := make(chan error, 1)
	seqs := make(chan uint64, 1)
	go func() {
		done <- producer.FollowTerminal(tb.ctx, tb.js, names, "wf", after, func(tm producer.Terminal) bool {
			seqs <- tm.Seq
			return false
		})
	}()
	tb.event("wf", "T1", subjects.EventTaskAccepted)
	seq := tb.event("wf", "T1", subjects.EventTaskCompleted)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-tb.ctx.Done():
		t.Fatal("FollowTerminal did not deliver the terminal event")
	}
	require.Equal(t, seq, natstest.Recv(t, seqs, 30*time.Second))
}
