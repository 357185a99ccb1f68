package state_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type testBundle struct {
	ctx   context.Context
	kv    jetstream.KeyValue
	store *state.Store
}

// setup starts an embedded server with the contract's buckets.
func setup(t *testing.T) *testBundle {
	t.Helper()
	_, _, _, res := natstest.Provisioned(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &testBundle{ctx: ctx, kv: res.State, store: state.New(res.State)}
}

// eachStore runs test on a Store on its own server.
func eachStore(t *testing.T, test func(t *testing.T, tb *testBundle)) {
	t.Helper()
	test(t, setup(t))
}

func taskState(wf, task string) subjects.TaskState {
	return subjects.TaskState{
		Workflow: wf, Task: task, State: subjects.StateRunning, Stage: string(subjects.RolePlanner),
		Attempt: 1, UpdatedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Worker: "w1",
	}
}

func TestGetTaskMissing(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, tb *testBundle) {
		_, err := tb.store.GetTask(tb.ctx, "wf", "nope")
		require.ErrorIs(t, err, state.ErrNotFound)
	})
}

func TestCreateTaskTwiceConflicts(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, tb *testBundle) {
		st := taskState("wf", "T1")
		created, err := tb.store.CreateTask(tb.ctx, st)
		require.NoError(t, err)
		require.Positive(t, created.Revision)

		got, err := tb.store.GetTask(tb.ctx, "wf", "T1")
		require.NoError(t, err)
		require.Equal(t, created, got)

		other := st
		other.Worker = "w2"
		_, err = tb.store.CreateTask(tb.ctx, other)
		require.ErrorIs(t, err, state.ErrConflict)

		got, err = tb.store.GetTask(tb.ctx, "wf", "T1")
		require.NoError(t, err)
		require.Equal(t, "w1", got.Worker, "the losing create wrote nothing")
	})
}

func TestUpdateTaskRevision(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, tb *testBundle) {
		st := taskState("wf", "T1")
		created, err := tb.store.CreateTask(tb.ctx, st)
		require.NoError(t, err)

		st.Stage = string(subjects.RoleImplementer)
		st.Outputs = map[subjects.Role]string{subjects.RolePlanner: "planner.abc"}
		next, err := tb.store.UpdateTask(tb.ctx, st, created.Revision)
		require.NoError(t, err)
		require.Greater(t, next.Revision, created.Revision)

		// A writer still holding the first revision has lost its claim.
		stale := st
		stale.Worker = "w2"
		_, err = tb.store.UpdateTask(tb.ctx, stale, created.Revision)
		require.ErrorIs(t, err, state.ErrConflict)

		got, err := tb.store.GetTask(tb.ctx, "wf", "T1")
		require.NoError(t, err)
		require.Equal(t, next.Revision, got.Revision)
		require.Equal(t, "w1", got.Worker)
		require.Equal(t, string(subjects.RoleImplementer), got.Stage)
		require.Equal(t, "planner.abc", got.Outputs[subjects.RolePlanner])

		last, err := tb.store.UpdateTask(tb.ctx, st, got.Revision)
		require.NoError(t, err)
		require.Greater(t, last.Revision, got.Revision)
	})
}

func TestUpdateTaskMissingConflicts(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, tb *testBundle) {
		_, err := tb.store.UpdateTask(tb.ctx, taskState("wf", "never"), 1)
		require.ErrorIs(t, err, state.ErrConflict)
	})
}

func TestGetWorkflow(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, err := tb.store.GetWorkflow(tb.ctx, "wf")
	require.ErrorIs(t, err, state.ErrNotFound)

	ws := subjects.WorkflowState{State: subjects.StatePaused, Reason: "lunch", UpdatedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	b, err := json.Marshal(ws)
	require.NoError(t, err)
	rev, err := tb.kv.Put(tb.ctx, subjects.WorkflowKey("wf"), b)
	require.NoError(t, err)

	got, err := tb.store.GetWorkflow(tb.ctx, "wf")
	require.NoError(t, err)
	require.Equal(t, state.Workflow{WorkflowState: ws, Revision: rev}, got)

	// The workflow key is no task's key.
	_, err = tb.store.GetTask(tb.ctx, "wf", "T1")
	require.ErrorIs(t, err, state.ErrNotFound)
}

func TestEscapedIDsRoundTrip(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, tb *testBundle) {
		cases := []struct{ wf, task string }{
			{"board.T1", "T1.1"},
			{"a/b", "c/d.e"},
			{"wf*>", "täsk-1"},
			{"a.b", "c"}, // must not collide with ("a", "b.c")
			{"a", "b.c"},
		}
		for _, c := range cases {
			st := taskState(c.wf, c.task)
			created, err := tb.store.CreateTask(tb.ctx, st)
			require.NoError(t, err, "%q/%q", c.wf, c.task)

			got, err := tb.store.GetTask(tb.ctx, c.wf, c.task)
			require.NoError(t, err, "%q/%q", c.wf, c.task)
			require.Equal(t, created.Revision, got.Revision)
			require.Equal(t, c.wf, got.Workflow)
			require.Equal(t, c.task, got.Task)

			up, err := tb.store.UpdateTask(tb.ctx, st, got.Revision)
			require.NoError(t, err)
			require.Greater(t, up.Revision, got.Revision)
		}

		keys, err := tb.kv.Keys(tb.ctx)
		require.NoError(t, err)
		require.Len(t, keys, len(cases), "each task has its own key")
		for _, k := range keys {
			require.NotContains(t, k, "/")
			require.NotContains(t, k, "*")
			require.NotContains(t, k, ">")
		}
		require.Contains(t, keys, "board=2ET1.T1=2E1")

		// Workflow keys escape too.
		_, err = tb.store.GetWorkflow(tb.ctx, "board.T1")
		require.ErrorIs(t, err, state.ErrNotFound)
	})
}

func TestWriteWorkflowCompareAndSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	paused := subjects.WorkflowState{State: subjects.StatePaused, Reason: "r", UpdatedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	rev, err := b.store.WriteWorkflow(b.ctx, "wf.1", paused, 0)
	require.NoError(t, err)
	_, err = b.store.WriteWorkflow(b.ctx, "wf.1", paused, 0)
	require.ErrorIs(t, err, state.ErrConflict, "created twice")
	_, err = b.store.WriteWorkflow(b.ctx, "wf.1", paused, rev+1)
	require.ErrorIs(t, err, state.ErrConflict, "a revision that is not the last")
	running := paused
	running.State = subjects.StateRunning
	next, err := b.store.WriteWorkflow(b.ctx, "wf.1", running, rev)
	require.NoError(t, err)
	got, err := b.store.GetWorkflow(b.ctx, "wf.1")
	require.NoError(t, err)
	require.Equal(t, next, got.Revision)
	require.Equal(t, running, got.WorkflowState)
}

// States are encoded into reused buffers: each value stored is the
// state's own bytes, whatever was encoded into the buffer before it, from
// many writers at once (-race sees a buffer reused while still in use).
func TestWritesStoreTheirOwnBytes(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, tb *testBundle) {
		body := []byte(`{"reasoning":"` + strings.Repeat("x", 4096) + `"}`)
		states := make([]subjects.TaskState, 24)
		for i := range states {
			st := taskState("wf", "T"+strconv.Itoa(i))
			for range i % 4 { // outboxes of 0-3 events: values of different sizes
				st.Outbox = append(st.Outbox, subjects.OutboxItem{Event: &subjects.OutboxEvent{
					ID: "e" + strconv.Itoa(i), Workflow: "wf", Task: st.Task, Actor: subjects.ActorSystem,
					Type: subjects.EventTaskAccepted, Time: st.UpdatedAt, Body: body}})
			}
			states[i] = st
		}
		var wg sync.WaitGroup
		for _, st := range states {
			wg.Go(func() {
				created, err := tb.store.CreateTask(tb.ctx, st)
				if err != nil {
					t.Error(err) // not require: this is not the test's goroutine
					return
				}
				st.Stage = string(subjects.RoleJudge)
				_, err = tb.store.UpdateTask(tb.ctx, st, created.Revision)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		for _, st := range states {
			want, err := json.Marshal(&st)
			require.NoError(t, err)
			e, err := tb.kv.Get(tb.ctx, subjects.StateKey(st.Workflow, st.Task))
			require.NoError(t, err)
			var stored subjects.TaskState
			require.NoError(t, json.Unmarshal(e.Value(), &stored), st.Task)
			require.Equal(t, string(subjects.RoleJudge), stored.Stage, st.Task)
			stored.Stage = st.Stage
			got, err := json.Marshal(&stored)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), st.Task)
		}
	})
}

// A task whose key was deleted (drover gc removes ended tasks) is created
// afresh when its request comes again: the create writes over the marker.
func TestCreateTaskOverADeletedKey(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, tb *testBundle) {
		st := taskState("wf", "T1")
		_, err := tb.store.CreateTask(tb.ctx, st)
		require.NoError(t, err)
		require.NoError(t, tb.kv.Delete(tb.ctx, subjects.StateKey("wf", "T1")))
		_, err = tb.store.GetTask(tb.ctx, "wf", "T1")
		require.ErrorIs(t, err, state.ErrNotFound)

		st.Worker = "w2"
		created, err := tb.store.CreateTask(tb.ctx, st)
		require.NoError(t, err)
		got, err := tb.store.GetTask(tb.ctx, "wf", "T1")
		require.NoError(t, err)
		require.Equal(t, created, got)
		require.Equal(t, "w2", got.Worker)
	})
}
