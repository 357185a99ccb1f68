package tests

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// fakeDeliverer delivers by the task ID: ok-* completes with a URL,
// park-* parks awaiting_merge, fail-* fails with pr_failed.
type fakeDeliverer struct{}

func (fakeDeliverer) Deliver(_ context.Context, d pipeline.DeliveryRequest) (pipeline.DeliveryResult, error) {
	switch d.Task[:2] {
	case "ok":
		return pipeline.Delivered(map[string]any{"url": "https://forge.invalid/pr/1"}), nil
	case "pa":
		if d.Attempt > 1 {
			return pipeline.Delivered(map[string]any{"attempt": d.Attempt}), nil
		}
		return pipeline.Parked("awaiting_merge", map[string]any{"queued": true}), nil
	}
	return pipeline.DeliveryResult{}, &pipeline.DeliveryError{Reason: "pr_failed", Err: errors.New("the forge said 422")}
}

// The delivery hook: a Deliverer completes a task with its fields, fails
// it with its own reason (one DLQ entry), or parks it; an outside actor
// then completes it (once: a second finish is refused) or sends it back to
// its implementer for a new attempt.
func TestDeliveryHook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := fakeDeliverer{}
	w := b.startWorker(worker.Config{Concurrency: 2, Runners: runner.SimSet(runner.NewSim(runner.SimOptions{})), Deliverer: d})
	after := b.submit(task("dh", "ok-1"), task("dh", "fail-1"))
	got := b.waitTerminal("dh", after, 2)
	require.Equal(t, subjects.EventTaskCompleted, got["ok-1"].EventType)
	require.JSONEq(t, `{"url":"https://forge.invalid/pr/1"}`, field(t, got["ok-1"].Output, "delivery"))
	require.Equal(t, subjects.EventTaskFailed, got["fail-1"].EventType)
	require.Equal(t, "pr_failed", got["fail-1"].Action)
	dlq := b.dlq()
	require.Len(t, dlq, 1)
	require.Equal(t, "pr_failed", dlq[0].Header.Get(subjects.HeaderReason))

	// Parked: acked, in state awaiting_merge with the would-be result.
	after = b.submit(task("dh", "park-1"), task("dh", "park-2"))
	kv, err := b.js.KeyValue(context.Background(), b.names.StateBucket())
	require.NoError(t, err)
	store := state.New(kv)
	get := func(id string) (state.Task, bool) {
		st, err := store.GetTask(context.Background(), "dh", id)
		return st, err == nil && st.State == "awaiting_merge"
	}
	require.Eventually(t, func() bool {
		_, ok1 := get("park-1")
		_, ok2 := get("park-2")
		return ok1 && ok2
	}, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return w.Pool().Stats().InFlight == 0 }, 10*time.Second, 10*time.Millisecond,
		"a parked task holds no pool slot once its message is acked")
	p := w.Pipeline()
	ctx := context.Background()

	cur, _ := get("park-1")
	note := pipeline.Note{Type: "merge_merged", Actor: subjects.ActorSystem, Action: "merged", Metadata: map[string]any{"target": "main"}}
	_, err = p.CompleteParked(ctx, cur, "awaiting_merge", map[string]any{"target_commit": "abc123"}, note)
	require.NoError(t, err)
	_, err = p.CompleteParked(ctx, cur, "awaiting_merge", map[string]any{"target_commit": "abc123"}, note)
	require.ErrorIs(t, err, pipeline.ErrAlreadyDecided, "a second finish of the same parking is refused")
	now, err := store.GetTask(ctx, "dh", "park-1")
	require.NoError(t, err)
	_, err = p.CompleteParked(ctx, now, "awaiting_merge", nil)
	require.ErrorIs(t, err, pipeline.ErrNotParked)

	cur, _ = get("park-2")
	_, err = p.RetryParked(ctx, cur, "awaiting_merge", "merge", "conflict in lib.txt", "", note)
	require.NoError(t, err)

	got = b.waitTerminal("dh", after, 2)
	require.Equal(t, subjects.EventTaskCompleted, got["park-1"].EventType)
	require.JSONEq(t, `{"queued":true,"target_commit":"abc123"}`, field(t, got["park-1"].Output, "delivery"))
	require.Equal(t, subjects.EventTaskCompleted, got["park-2"].EventType)
	require.JSONEq(t, `{"attempt":2}`, field(t, got["park-2"].Output, "delivery"), "delivered after a new attempt")
	var notes, impl2 int
	for _, ev := range b.events("dh") {
		if ev.EventType == "merge_merged" {
			notes++
		}
		if ev.TaskID == "park-2" && ev.EventType == subjects.EventImplementerChange && ev.Attempt == 2 {
			impl2++
			require.Contains(t, string(ev.Input), "conflict in lib.txt", "the feedback reaches the implementer")
		}
	}
	require.Equal(t, 2, notes, "each finish records its note once")
	require.Equal(t, 1, impl2)
}

// field returns one top-level field of a JSON object.
func field(t *testing.T, raw json.RawMessage, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	return string(m[key])
}
