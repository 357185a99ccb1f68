package mergequeue_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/workspace"
)

// recordingSink records each task's Merged calls (the target commit).
type recordingSink struct {
	mu     sync.Mutex
	merged map[string][]string
	signal chan string
}

func newRecordingSink() *recordingSink {
	return &recordingSink{merged: map[string][]string{}, signal: make(chan string, 16)}
}

func (s *recordingSink) Wanted(context.Context, mergequeue.Entry) (mergequeue.Want, error) {
	return mergequeue.WantMerge, nil
}

func (s *recordingSink) Merged(_ context.Context, e mergequeue.Entry, _, commit string) error {
	s.mu.Lock()
	s.merged[e.Task] = append(s.merged[e.Task], commit)
	s.mu.Unlock()
	s.signal <- e.Task
	return nil
}

func (s *recordingSink) SendBack(context.Context, mergequeue.Entry, string, string) error { return nil }

func (s *recordingSink) wait(t *testing.T, task string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case got := <-s.signal:
			if got == task {
				return
			}
		case <-deadline:
			t.Fatalf("%s was not reported merged", task)
		}
	}
}

// startMerger runs a merger of main with strategy until the returned stop.
func (bd *bundle) startMerger(t *testing.T, name, strategy string, sink mergequeue.Sink) (*mergequeue.Merger, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ws, err := workspace.New(workspace.Deps{}, workspace.Config{Repo: bd.remote, Dir: filepath.Join(bd.root, name)})
	require.NoError(t, err)
	require.NoError(t, ws.Start(ctx))
	m, err := mergequeue.New(ctx, mergequeue.Deps{JS: bd.js, Names: bd.names, Repo: mergequeue.GitRepo{M: ws}, Sink: sink, Holder: name},
		mergequeue.Config{Target: "main", Batch: 4, LeaseTTL: 2 * time.Second, Strategy: strategy})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); natstest.Recv(t, done, 30*time.Second); _ = ws.Close() }) }
	t.Cleanup(stop)
	return m, stop
}

// A hostile agent's commit that claims, in its message, to bring another
// task's head (Drover-Merge-Head: <victim's head>) lands on main first.
// The victim's entry is then merged for real: its change is on main once,
// and it was not skipped as already merged. A merger that starts later and
// gets the victim's entry again (a redelivery after the push) finds it on
// main from the merge log, and skips it instead of merging it twice.
func TestMergeHeadTrailerIsNotARecord(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{mergequeue.StrategyMerge, mergequeue.StrategyRebase} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			bd := setup(t, nil, 4)
			base := git(t, bd.clone, "rev-parse", "origin/main")
			victim := bd.branch("victim", base, map[string]string{"victim.txt": "the victim's change\n"})

			git(t, bd.clone, "checkout", "-q", "-f", "-B", "evil", base)
			bd.write("evil.txt", "evil\n")
			git(t, bd.clone, "add", "-A")
			git(t, bd.clone, "commit", "-q", "-m", "evil\n\n"+workspace.MergeTrailer+": "+victim)
			evil := git(t, bd.clone, "rev-parse", "HEAD")
			git(t, bd.clone, "push", "-q", "-f", "origin", "evil")

			sink := newRecordingSink()
			m, stop := bd.startMerger(t, "m1", strategy, sink)
			bd.enqueue("evil", evil, 1)
			sink.wait(t, "evil")
			require.Contains(t, git(t, bd.remote, "log", "--format=%B", "main"), workspace.MergeTrailer+": "+victim,
				"the forged trailer is on main")

			bd.enqueue("victim", victim, 1)
			sink.wait(t, "victim")
			st := m.Stats()
			require.Zero(t, st.Skipped, "the victim was not taken as merged")
			require.Equal(t, int64(2), st.Merged)
			main := git(t, bd.remote, "rev-parse", "main")
			require.Equal(t, "the victim's change", git(t, bd.remote, "show", main+":victim.txt"))
			require.Equal(t, 1, victimCopies(t, bd))
			stop()

			// The victim's entry again, as a redelivery: a new merger
			// (a new session) knows from the merge log it is on main.
			sink2 := newRecordingSink()
			m2, _ := bd.startMerger(t, "m2", strategy, sink2)
			republish(t, bd, "victim", victim)
			sink2.wait(t, "victim")
			require.Equal(t, int64(1), m2.Stats().Skipped)
			require.Zero(t, m2.Stats().Merged)
			require.Equal(t, main, git(t, bd.remote, "rev-parse", "main"), "main did not move")
			require.Equal(t, 1, victimCopies(t, bd))
			var pushes int
			for _, r := range bd.checkSessions() {
				if r.Kind == mergequeue.LogPush {
					pushes++
				}
			}
			require.Equal(t, 2, pushes, "each batch recorded before its push")
		})
	}
}

// victimCopies counts the commits on the remote's main made from the
// victim's commit (its own, or a rebase's copy).
func victimCopies(t *testing.T, bd *bundle) int {
	t.Helper()
	n := 0
	for _, s := range strings.Split(git(t, bd.remote, "log", "--format=%s", "main"), "\n") {
		if s == "task victim" {
			n++
		}
	}
	return n
}

// republish puts task's entry in the queue again under another message id,
// as a redelivery would bring it.
func republish(t *testing.T, bd *bundle, task, head string) {
	t.Helper()
	data, err := json.Marshal(mergequeue.Entry{Workflow: "wf", Task: task, Branch: task, Head: head, Attempt: 1, Target: "main", Enqueued: time.Now().UTC()})
	require.NoError(t, err)
	msg := nats.NewMsg(bd.names.Subject("main"))
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, "again-"+head)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = bd.js.PublishMsg(ctx, msg)
	require.NoError(t, err)
}
