package tests

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// aliceUser is a second reviewer, written as docs/security.md and
// deploy/nats/profiles.conf tell a deployment to add one per person.
const aliceUser = `{user: alice, password: "alice-test-pw", permissions: {
        publish: {allow: ["drover.ctl.review.*.*.alice"], deny: $AUDIT_GUARD}
        subscribe: {allow: ["_INBOX_alice.>"]}}}`

// TestReviewerBoundToUser runs deploy/nats/permissions.conf with the
// reviewer user and alice: the producer cannot decide a review in either
// subject form; alice cannot sign as the reviewer user, nor send the
// unbound form, nor name someone else in the body of her own; the
// reviewer user cannot submit; each reviewer's decision is recorded under
// their own NATS user's name.
func TestReviewerBoundToUser(t *testing.T) {
	t.Parallel()
	s := startPermServer(t, aliceUser)
	names := subjects.MustNames("drover")
	spawn(t, "serve", "--nats-url", s.url, "--user", "worker", "--password", permPasswords["worker"],
		"--http", "", "--log-format", "json", "--worker-id", "bind-worker", "--review", subjects.ReviewAfterJudge).waitStarted(60 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	prod := s.connect(t, "producer")
	for _, id := range []string{"T1", "T2"} {
		_, err := producer.Publish(ctx, prod.js, names, subjects.DefaultQueue, task("bind", id))
		require.NoError(t, err)
	}
	kv, err := prod.js.KeyValue(ctx, names.StateBucket())
	require.NoError(t, err)
	store := state.New(kv)
	waitState := func(id, want string) state.Task {
		t.Helper()
		var st state.Task
		require.Eventually(t, func() bool {
			st, err = store.GetTask(ctx, "bind", id)
			return err == nil && st.State == want
		}, 60*time.Second, 20*time.Millisecond, "bind/%s reaches %s", id, want)
		return st
	}
	waitState("T1", subjects.StateAwaitingReview)
	waitState("T2", subjects.StateAwaitingReview)

	body := func(reviewer string) []byte {
		b, err := json.Marshal(subjects.ReviewDecisionRequest{Decision: subjects.ReviewApprove, Comment: "ok", Reviewer: reviewer})
		require.NoError(t, err)
		return b
	}
	request := func(c *permConn, subj string, b []byte) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := c.nc.RequestWithContext(ctx, subj, b)
			return err
		}
	}
	// The producer cannot decide, in either form.
	for _, subj := range []string{names.ReviewSubject("bind", "T1"), names.ReviewSubjectAs("bind", "T1", "producer")} {
		prod.refused(t, subj, request(prod, subj, body("producer")))
	}
	// alice cannot sign as the reviewer user, nor send the unbound form.
	alice := s.connectAs(t, "alice", "alice-test-pw")
	for _, subj := range []string{names.ReviewSubjectAs("bind", "T1", "reviewer"), names.ReviewSubject("bind", "T1")} {
		alice.refused(t, subj, request(alice, subj, body("reviewer")))
	}
	// On her own subject, a body naming another reviewer is refused by
	// the worker, and nothing is decided.
	msg, err := alice.nc.RequestWithContext(ctx, names.ReviewSubjectAs("bind", "T1", "alice"), body("reviewer"))
	require.NoError(t, err)
	var reply subjects.ReviewReply
	require.NoError(t, json.Unmarshal(msg.Data, &reply))
	require.Contains(t, reply.Error, `reviewer "reviewer" in the body is not "alice"`)
	require.Equal(t, subjects.StateAwaitingReview, waitState("T1", subjects.StateAwaitingReview).State)

	// A reviewer cannot submit a task.
	rv := s.connect(t, "reviewer")
	rv.refused(t, "drover.tasks.default", func(ctx context.Context) error {
		_, err := producer.Publish(ctx, rv.js, names, subjects.DefaultQueue, task("bind", "T3"))
		return err
	})

	// The reviewer user decides through the CLI: the reviewer defaults to
	// the NATS user, sent in the subject.
	out := s.drover(t, "reviewer", "review", "approve", "bind/T1", "--comment", "ok")
	require.Contains(t, out, "approved by reviewer")
	// alice decides as herself (the body may leave the reviewer out).
	msg, err = alice.nc.RequestWithContext(ctx, names.ReviewSubjectAs("bind", "T2", "alice"), body(""))
	require.NoError(t, err)
	reply = subjects.ReviewReply{}
	require.NoError(t, json.Unmarshal(msg.Data, &reply))
	require.Empty(t, reply.Error)

	require.Equal(t, "reviewer", waitState("T1", subjects.StateCompleted).Review.Reviewer)
	require.Equal(t, "alice", waitState("T2", subjects.StateCompleted).Review.Reviewer)
	require.ElementsMatch(t, []string{
		"producer drover.ctl.review.bind.T1", "producer drover.ctl.review.bind.T1.producer",
		"alice drover.ctl.review.bind.T1.reviewer", "alice drover.ctl.review.bind.T1",
		"reviewer drover.tasks.default",
	}, s.log.violations(), "the server refused exactly the decisions meant to be refused")
}
