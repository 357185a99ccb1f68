package worker_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// TestProducerAttackRefusedAtAdmission: a producer asks for the remote's
// main, the base branch, the merge target, a protected pattern, a branch
// outside the prefix, or a review below the operator's; each request is
// rejected at admission (invalid_value, a message naming the field) with
// no role run and nothing pushed, and the remote's branches never move.
// A branch under the prefix and a raised review level are accepted.
func TestProducerAttackRefusedAtAdmission(t *testing.T) {
	b := newWSBundle(t)
	git(t, b.repo, "branch", "stable", "main")
	git(t, b.repo, "branch", "develop", "main")
	refsBefore := git(t, b.repo, "for-each-ref", "--format=%(refname) %(objectname)")

	nc, err := nats.Connect(b.srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	a := &agent{t: t, edit: editTask}
	w, err := worker.New(nc, worker.Config{
		Queues:      []string{subjects.DefaultQueue, "low"},
		Concurrency: 4, FetchWait: 200 * time.Millisecond, Log: natstest.Quiet(), Runners: a.set(),
		Consumer: broker.ConsumerSettings{AckWait: 5 * time.Second},
		Pipeline: pipeline.Config{RetryBase: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond,
			Review: pipeline.ReviewPolicy{Mode: subjects.ReviewAfterJudge, Queues: map[string]string{"low": subjects.ReviewOff}}},
		Workspace: workspace.Config{Repo: b.repo, Dir: t.TempDir(), Push: true, PushDelay: 20 * time.Millisecond,
			BaseRef: "stable", ProtectedBranches: []string{"release/*"}},
		Merge: mergequeue.Config{Target: "develop"},
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

	attacks := map[string]struct {
		req  subjects.TaskRequest
		want string
	}{
		"main":       {subjects.TaskRequest{ID: "main", Scope: "s", Branch: "main"}, `branch: protected branch: "main"`},
		"main-off":   {subjects.TaskRequest{ID: "main-off", Scope: "s", Branch: "main", Review: subjects.ReviewOff}, `review "off" is below`},
		"base":       {subjects.TaskRequest{ID: "base", Scope: "s", Branch: "stable"}, `"stable" is the base ref`},
		"target":     {subjects.TaskRequest{ID: "target", Scope: "s", Branch: "develop"}, `"develop" is protected (pattern "develop")`},
		"pattern":    {subjects.TaskRequest{ID: "pattern", Scope: "s", Branch: "release/1.0"}, `pattern "release/*"`},
		"outside":    {subjects.TaskRequest{ID: "outside", Scope: "s", Branch: "feature/x"}, `branch: branch not allowed: "feature/x" is not under "drover/"`},
		"review-off": {subjects.TaskRequest{ID: "review-off", Scope: "s", Review: subjects.ReviewOff}, `review "off" is below queue default's review mode "after_judge"`},
		"instead":    {subjects.TaskRequest{ID: "instead", Scope: "s", Review: subjects.ReviewInstead}, `review "instead" is below`},
	}
	reqs := make([]subjects.TaskRequest, 0, len(attacks))
	for _, at := range attacks {
		reqs = append(reqs, at.req)
	}
	term := b.submit(t, "attack", reqs...)
	for id, at := range attacks {
		ev := term[id]
		require.Equal(t, subjects.EventTaskRejected, ev.EventType, "%s: %+v", id, ev)
		require.Equal(t, string(subjects.ReasonInvalidValue), ev.Action, id)
		require.Contains(t, ev.Error, at.want, id)
		require.Empty(t, b.events(t, "attack", id, subjects.EventTaskAccepted), "%s: never accepted", id)
	}
	require.Zero(t, a.implCalls(), "no role ran for a refused request")

	// Accepted: a branch under the prefix, and a review raised over the
	// queue's off; both park for review (nothing is pushed before it).
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	_, err = producer.Publish(ctx2, b.js, b.names, subjects.DefaultQueue, subjects.TaskRequest{Workflow: "fine", ID: "own", Scope: "s", Branch: "drover/own/branch"})
	require.NoError(t, err)
	_, err = producer.Publish(ctx2, b.js, b.names, "low", subjects.TaskRequest{Workflow: "fine", ID: "raised", Scope: "s", Review: subjects.ReviewAfterJudge})
	require.NoError(t, err)
	for _, id := range []string{"own", "raised"} {
		require.Eventually(t, func() bool {
			evs, err := b.eventsOf("fine", id, subjects.EventReviewRequested)
			return err == nil && len(evs) == 1
		}, 30*time.Second, 20*time.Millisecond, "%s parks for review", id)
	}
	st := taskState(t, b, "fine", "own")
	require.Equal(t, "drover/own/branch", st.Workspace.Branch)
	require.Equal(t, refsBefore, git(t, b.repo, "for-each-ref", "--format=%(refname) %(objectname)"),
		"no branch of the remote moved or appeared")

	// Approved, the accepted task's own branch is pushed; main, the base
	// and the target stay where they were.
	after, err := producer.AuditLastSeq(ctx2, b.js, b.names)
	require.NoError(t, err)
	body, err := json.Marshal(subjects.ReviewDecisionRequest{Decision: subjects.ReviewApprove, Comment: "ok"})
	require.NoError(t, err)
	msg, err := nc.RequestWithContext(ctx2, b.names.ReviewSubjectAs("fine", "own", "tester"), body)
	require.NoError(t, err)
	var reply subjects.ReviewReply
	require.NoError(t, json.Unmarshal(msg.Data, &reply))
	require.Empty(t, reply.Error)
	require.NoError(t, producer.FollowTerminal(ctx2, b.js, b.names, "fine", after, func(tm producer.Terminal) bool {
		require.Equal(t, "own", tm.Event.TaskID)
		require.Equal(t, subjects.EventTaskCompleted, tm.Event.EventType, "%+v", tm.Event)
		return false
	}))
	require.Equal(t, "tester", taskState(t, b, "fine", "own").Review.Reviewer, "the subject's reviewer is recorded")
	git(t, b.repo, "rev-parse", "--verify", "refs/heads/drover/own/branch")
	for _, ref := range []string{"main", "stable", "develop"} {
		require.Equal(t, b.base, git(t, b.repo, "rev-parse", "refs/heads/"+ref), "%s never moves", ref)
	}
}
