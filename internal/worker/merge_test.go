package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// startMerging runs a worker with delivery merge into main until the test
// ends.
func (b *wsBundle) startMerging(t *testing.T, set runner.Set, dir string) {
	t.Helper()
	nc, err := nats.Connect(b.srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	w, err := worker.New(nc, worker.Config{
		Concurrency: 4, FetchWait: 200 * time.Millisecond, Grace: 5 * time.Second, Log: natstest.Quiet(), Runners: set,
		Consumer:  broker.ConsumerSettings{AckWait: 5 * time.Second},
		Pipeline:  pipeline.Config{RetryBase: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond},
		Workspace: workspace.Config{Repo: b.repo, Dir: dir, Push: true, PushDelay: 20 * time.Millisecond},
		Delivery:  pipeline.DeliveryMerge,
		Merge:     mergequeue.Config{Target: "main", LeaseTTL: 2 * time.Second},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { cancel(); require.NoError(t, natstest.Recv(t, done, 30*time.Second)) }) })
	select {
	case <-w.Started():
	case err := <-done:
		t.Fatalf("worker stopped at start: %v", err)
	}
}

// With delivery merge, approved branches are merged into main by the merge
// queue and each task_completed names the target commit holding it; of
// two tasks whose first attempts both rewrite lib.txt, the one merged
// second conflicts and goes back to its implementer with the conflict as
// feedback, on top of the new main, and is merged after its next attempt.
func TestMergeDeliveryConflictGoesBackToTheImplementer(t *testing.T) {
	t.Parallel()
	b := newWSBundle(t)
	a := &agent{t: t, edit: func(t *testing.T, req runner.Request) {
		dir := req.Workspace.Dir
		require.NoError(t, os.WriteFile(filepath.Join(dir, req.Task.ID+".txt"), []byte(req.Task.ID+"\n"), 0o644))
		if req.Attempt == 1 && req.Task.ID != "solo" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "lib.txt"), []byte("one by "+req.Task.ID+"\ntwo\nthree\n"), 0o644))
		}
	}}
	b.startMerging(t, a.set(), filepath.Join(t.TempDir(), "ws"))
	out := b.submit(t, "wf", subjects.TaskRequest{ID: "left", Scope: "s"},
		subjects.TaskRequest{ID: "right", Scope: "s"}, subjects.TaskRequest{ID: "solo", Scope: "s"})

	main := git(t, b.repo, "rev-parse", "main")
	for task, ev := range out {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, "task %s: %+v", task, ev)
		var o struct {
			Delivery struct {
				Merge struct{ Target, Commit, Head string }
			}
		}
		require.NoError(t, json.Unmarshal(ev.Output, &o), "%s", ev.Output)
		m := o.Delivery.Merge
		require.Equal(t, "main", m.Target, "task %s: %s", task, ev.Output)
		_, err := gitErr(t, b.repo, "merge-base", "--is-ancestor", m.Head, m.Commit)
		require.NoError(t, err, "task %s: the target commit %s does not hold its head %s", task, m.Commit, m.Head)
		_, err = gitErr(t, b.repo, "merge-base", "--is-ancestor", m.Commit, main)
		require.NoError(t, err, "task %s", task)
		require.Equal(t, task, git(t, b.repo, "show", "main:"+task+".txt"))
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	var back []runner.Request
	for _, r := range a.impl {
		if r.Attempt == 2 {
			back = append(back, r)
		}
	}
	require.Len(t, back, 1, "exactly one of left and right is sent back")
	loser := back[0].Task.ID
	winner := map[string]string{"left": "right", "right": "left"}[loser]
	require.Contains(t, back[0].Feedback, "Merge queue: branch")
	require.Contains(t, back[0].Feedback, "conflict")
	require.Contains(t, git(t, b.repo, "show", "main:lib.txt"), "one by "+winner)
	// The second attempt started from the new main: it holds the winner's file.
	for i, r := range a.impl {
		if r.Task.ID == loser && r.Attempt == 2 {
			require.Contains(t, a.implSeen[i], winner+".txt", "the new attempt starts from the new target head")
		}
	}
}
