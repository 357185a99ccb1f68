package retention_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/retention"
	"github.com/droverhq/drover/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var names = subjects.MustNames(subjects.DefaultPrefix)

type testBundle struct {
	ctx    context.Context
	js     jetstream.JetStream
	stores retention.Stores
	blobs  *blobs.Store
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	_, _, js, res := natstest.Provisioned(t, natstest.Sync(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return &testBundle{ctx: ctx, js: js, blobs: blobs.New(res.Blobs),
		stores: retention.Stores{State: res.State, Cache: res.Cache, Blobs: res.Blobs, Audit: res.Audit}}
}

// ref stores a large value made of seed and returns its reference and
// name.
func (tb *testBundle) ref(t *testing.T, seed string) (json.RawMessage, string) {
	t.Helper()
	big := make([]byte, blobs.Limit+10)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	copy(big[1:], seed)
	big[0], big[len(big)-1] = '"', '"'
	ref, err := tb.blobs.Shrink(tb.ctx, big)
	require.NoError(t, err)
	var r blobs.Ref
	require.NoError(t, json.Unmarshal(ref, &r))
	return ref, r.Blob
}

func (tb *testBundle) putState(t *testing.T, key string, v any) {
	t.Helper()
	body, err := json.Marshal(v)
	require.NoError(t, err)
	_, err = tb.stores.State.Put(tb.ctx, key, body)
	require.NoError(t, err)
}

func (tb *testBundle) keys(t *testing.T) []string {
	t.Helper()
	keys, err := tb.stores.State.ListKeys(tb.ctx)
	require.NoError(t, err)
	var out []string
	for k := range keys.Keys() {
		out = append(out, k)
	}
	return out
}

func (tb *testBundle) objects(t *testing.T) []string {
	t.Helper()
	infos, err := tb.stores.Blobs.List(tb.ctx)
	if err == jetstream.ErrNoObjectsFound {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, i := range infos {
		out = append(out, i.Name)
	}
	return out
}

func removed(rep retention.Report) []string {
	var out []string
	for _, it := range rep.Items {
		if it.Removed {
			out = append(out, it.Name)
		}
	}
	return out
}

// gc removes old terminal task state, idle workflow keys and old blobs
// nothing refers to; it keeps open tasks' state (running, paused) and the
// blobs they refer to (in their request and outbox), blobs of cached
// results, a paused workflow's key, and blobs the audit stream refers to
// unless BlobMaxAge opts in. Ages come from the entries' own times against
// an injected clock.
func TestRunRemovesOldTerminalStateAndUnreferencedBlobs(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	doneRef, doneBlob := tb.ref(t, "result of a completed task")
	reqRef, reqBlob := tb.ref(t, "request of a paused task")
	outboxRef, outboxBlob := tb.ref(t, "outbox of a running task")
	cacheRef, cacheBlob := tb.ref(t, "a cached result")
	auditRef, auditBlob := tb.ref(t, "an audit event's output")
	_, orphanBlob := tb.ref(t, "nothing refers to this")

	wf1, wf2, wf3 := subjects.WorkflowKey("wf1"), subjects.WorkflowKey("wf2"), subjects.WorkflowKey("wf3")
	tb.putState(t, subjects.StateKey("wf1", "T1"), subjects.TaskState{Workflow: "wf1", Task: "T1", State: subjects.StateCompleted, Result: doneRef})
	tb.putState(t, wf1, subjects.WorkflowState{State: subjects.StateRunning})
	ev, err := subjects.EncodeEvent(&subjects.AuditEvent{EventID: "e1", WorkflowID: "wf2", TaskID: "T2", Output: outboxRef})
	require.NoError(t, err)
	tb.putState(t, subjects.StateKey("wf2", "T2"), subjects.TaskState{Workflow: "wf2", Task: "T2", State: subjects.StateRunning,
		Outbox: []subjects.OutboxItem{{Event: ev}}})
	tb.putState(t, subjects.StateKey("wf2", "T3"), subjects.TaskState{Workflow: "wf2", Task: "T3", State: subjects.StateFailed})
	tb.putState(t, wf2, subjects.WorkflowState{State: subjects.StateRunning})
	tb.putState(t, subjects.StateKey("wf3", "T4"), subjects.TaskState{Workflow: "wf3", Task: "T4", State: subjects.StatePaused, Request: reqRef})
	tb.putState(t, subjects.WorkflowKey("wf4"), subjects.WorkflowState{State: subjects.StatePaused})
	tb.putState(t, wf3, subjects.WorkflowState{State: subjects.StatePaused})

	cached, err := json.Marshal(map[string]any{"output": cacheRef})
	require.NoError(t, err)
	_, err = tb.stores.Cache.Put(tb.ctx, "planner.0123", cached)
	require.NoError(t, err)
	event, err := json.Marshal(subjects.AuditEvent{EventID: "e2", WorkflowID: "wf1", TaskID: "T1", Output: auditRef})
	require.NoError(t, err)
	_, err = tb.js.Publish(tb.ctx, names.AuditSubject("wf1", "T1", subjects.ActorOf(subjects.RoleJudge), subjects.EventJudgeVerdict), event)
	require.NoError(t, err)

	allKeys, allBlobs := tb.keys(t), tb.objects(t)
	later := func() time.Time { return time.Now().Add(40 * 24 * time.Hour) }

	// Today nothing is old enough.
	rep, err := retention.Run(tb.ctx, tb.stores, retention.Options{Log: natstest.Quiet()})
	require.NoError(t, err)
	require.Empty(t, removed(rep))

	// A dry run 40 days later says what would go and removes nothing.
	rep, err = retention.Run(tb.ctx, tb.stores, retention.Options{DryRun: true, Now: later, Log: natstest.Quiet()})
	require.NoError(t, err)
	want := []string{subjects.StateKey("wf1", "T1"), subjects.StateKey("wf2", "T3"), wf1, doneBlob, orphanBlob}
	require.ElementsMatch(t, want, removed(rep))
	require.ElementsMatch(t, allKeys, tb.keys(t))
	require.ElementsMatch(t, allBlobs, tb.objects(t))

	rep, err = retention.Run(tb.ctx, tb.stores, retention.Options{Now: later, Log: natstest.Quiet()})
	require.NoError(t, err)
	require.ElementsMatch(t, want, removed(rep))
	require.ElementsMatch(t, []string{subjects.StateKey("wf2", "T2"), wf2, subjects.StateKey("wf3", "T4"), wf3, subjects.WorkflowKey("wf4")}, tb.keys(t))
	require.ElementsMatch(t, []string{reqBlob, outboxBlob, cacheBlob, auditBlob}, tb.objects(t))
	require.Equal(t, 1, rep.Removed(retention.KindWorkflow))

	// Opting in to --blob-max-age removes what only the audit stream refers to.
	rep, err = retention.Run(tb.ctx, tb.stores, retention.Options{Now: later, BlobMaxAge: 35 * 24 * time.Hour, Log: natstest.Quiet()})
	require.NoError(t, err)
	require.Equal(t, []string{auditBlob}, removed(rep))
	require.ElementsMatch(t, []string{reqBlob, outboxBlob, cacheBlob}, tb.objects(t))
	_, err = tb.blobs.Expand(tb.ctx, auditRef)
	require.ErrorIs(t, err, jetstream.ErrObjectNotFound, "the event's large value is gone, as documented")
}

func TestOptionsValidated(t *testing.T) {
	t.Parallel()
	_, err := retention.Run(context.Background(), retention.Stores{}, retention.Options{BlobMaxAge: time.Minute})
	require.ErrorIs(t, err, retention.ErrOptions)
	require.ErrorContains(t, err, "blob max age 1m0s is shorter than 2h0m0s")
}
