//go:build failpoints

package tests

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// settleLog is worker metrics that report what the consumer did with each
// message and count nothing else.
type settleLog struct{ settled chan string }

var _ consumers.Metrics = (*settleLog)(nil)

func (s *settleLog) Settled(action string)                                      { s.settled <- action }
func (s *settleLog) PoolSize(int)                                               {}
func (s *settleLog) InFlight(int)                                               {}
func (s *settleLog) Redelivered()                                               {}
func (s *settleLog) Heartbeat()                                                 {}
func (s *settleLog) Panicked()                                                  {}
func (s *settleLog) RoleDone(subjects.Role, string, bool, time.Duration, error) {}
func (s *settleLog) TaskDone(subjects.EventType)                                {}
func (s *settleLog) CachePutFailed()                                            {}
func (s *settleLog) AuditPublished(time.Duration)                               {}
func (s *settleLog) DLQWritten(subjects.Reason)                                 {}
func (s *settleLog) RoleGap(subjects.Role, time.Duration)                       {}
func (s *settleLog) SubmitToStart(time.Duration)                                {}

// Scenario: the claim is lost while a commit's events are published behind
// the next role. Right after the planner's commit, before its events go
// out, another owner moves the task's state on and writes an event of its
// own. The worker's fenced publish fails, it finds the state is no longer
// its own, and it writes nothing more: none of its events is stored, the
// state stays the other owner's, and the message is neither acked nor
// nakked (it stays pending for its owner).
// It sets the process's failpoints, so it runs alone (not in parallel).
func TestClaimLostWhileACommitIsPublished(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	const wf, id = "wf-lost", "T1"
	key := subjects.StateKey(wf, id)
	var (
		once      sync.Once
		takenOver = make(chan uint64, 1)
	)
	intrude := func() {
		kv, err := b.js.KeyValue(ctx, b.names.StateBucket())
		require.NoError(t, err)
		e, err := kv.Get(ctx, key)
		require.NoError(t, err)
		rev, err := kv.Update(ctx, key, e.Value(), e.Revision())
		require.NoError(t, err)
		_, err = audit.NewPublisher(b.js, b.names).PublishEvent(ctx, &subjects.AuditEvent{
			EventID:    subjects.EventID(wf, id, 1, subjects.ActorOf(subjects.RoleImplementer), subjects.EventTaskRetried, 9),
			EventType:  subjects.EventTaskRetried,
			WorkflowID: wf, TaskID: id, Actor: subjects.ActorOf(subjects.RoleImplementer), Attempt: 1,
			Timestamp: time.Now().UTC(), Status: subjects.StatusFailure, Worker: "intruder",
		}, "", true, 0)
		require.NoError(t, err)
		takenOver <- rev
	}
	m := &settleLog{settled: make(chan string, 4)}
	t.Cleanup(pipeline.SetFailpoints(func() { once.Do(intrude) }, nil))
	b.startWorker(worker.Config{
		Concurrency: 1, Runners: runner.SimSet(runner.NewSim(runner.SimOptions{})), Metrics: m,
	})
	b.submit(task(wf, id))

	rev := within(t, takenOver, "the worker made no commit")
	require.Equal(t, "abandon", within(t, m.settled, "the worker did not finish the delivery"),
		"a worker that lost its claim sends nothing for the message")

	kv, err := b.js.KeyValue(ctx, b.names.StateBucket())
	require.NoError(t, err)
	e, err := kv.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, rev, e.Revision(), "no state write after the claim was lost")
	var st subjects.TaskState
	require.NoError(t, json.Unmarshal(e.Value(), &st))
	require.Equal(t, string(subjects.RoleImplementer), st.Stage, "the state is the planner's commit, moved on by the other owner")

	evs := b.events(wf)
	require.Len(t, evs, 1, "only the other owner's event: %+v", evs)
	require.Equal(t, "intruder", evs[0].Worker)

	require.Equal(t, 1, consumerInfo(t, b).NumAckPending, "the message is left to its owner")
}

// Scenario: a commit's events cannot be published (the audit stream
// refuses them) while the next roles run. The round's commit must not
// replace that outbox: the delivery is nakked, and once the stream takes
// events again the next delivery publishes what the first one committed
// and goes on. Every event of the task is stored once, in order.
// It sets the process's failpoints, so it runs alone (not in parallel).
func TestACommitWaitsForTheEventsBeforeIt(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	const wf, id = "wf-refused", "T1"
	var (
		once    sync.Once
		orig    int32
		refused = make(chan struct{}, 1)
	)
	refuse := func() {
		s, err := b.js.Stream(ctx, b.names.AuditStream())
		require.NoError(t, err)
		cfg := s.CachedInfo().Config
		orig, cfg.MaxMsgSize = cfg.MaxMsgSize, 16
		_, err = b.js.UpdateStream(ctx, cfg)
		require.NoError(t, err)
		refused <- struct{}{}
	}
	m := &settleLog{settled: make(chan string, 16)}
	t.Cleanup(pipeline.SetFailpoints(func() { once.Do(refuse) }, nil))
	b.startWorker(worker.Config{
		Concurrency: 1, Runners: runner.SimSet(runner.NewSim(runner.SimOptions{})), Metrics: m,
	})
	after := b.submit(task(wf, id))
	within(t, refused, "the worker made no commit")
	require.Equal(t, "nak", within(t, m.settled, "the worker did not finish the delivery"),
		"a commit whose events are not out is retried, not overwritten")
	s, err := b.js.Stream(ctx, b.names.AuditStream())
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxMsgSize = orig
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	got := b.waitTerminal(wf, after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got[id].EventType)
	var types []subjects.EventType
	for _, ev := range b.events(wf) {
		types = append(types, ev.EventType)
	}
	require.Equal(t, []subjects.EventType{subjects.EventTaskAccepted, subjects.EventPlannerDecision,
		subjects.EventImplementerChange, subjects.EventJudgeVerdict, subjects.EventTaskCompleted}, types)
}
