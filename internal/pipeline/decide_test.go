package pipeline

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// TestDecideClaim covers every row of docs/architecture.md, "A task's
// walk", step 3.
func TestDecideClaim(t *testing.T) {
	t.Parallel()
	const seq, other = 10, 7
	for _, tc := range []struct {
		name string
		v    claimView
		want claimStep
	}{
		{"no state, first delivery: the first commit creates it",
			claimView{streamSeq: seq, numDelivered: 1}, claimFresh},
		{"no state, a redelivery: create it at once",
			claimView{streamSeq: seq, numDelivered: 2}, claimCreate},
		{"running state of another request: duplicate_id",
			claimView{exists: true, state: subjects.StateRunning, requestSeq: other, owner: 1, streamSeq: seq, numDelivered: 1}, claimDuplicate},
		{"completed state of another request: duplicate_id",
			claimView{exists: true, state: subjects.StateCompleted, requestSeq: other, owner: 1, streamSeq: seq, numDelivered: 1}, claimDuplicate},
		{"failed state of another request, redelivered: duplicate_id",
			claimView{exists: true, state: subjects.StateFailed, requestSeq: other, owner: 3, streamSeq: seq, numDelivered: 2}, claimDuplicate},
		{"parked state of another request (resume): take it over from its stage",
			claimView{exists: true, state: subjects.StatePaused, requestSeq: other, owner: 2, streamSeq: seq, numDelivered: 1}, claimResume},
		{"owned by a later delivery: abandon",
			claimView{exists: true, state: subjects.StateRunning, requestSeq: seq, owner: 3, streamSeq: seq, numDelivered: 2}, claimAbandon},
		{"owned by an earlier delivery: take it over",
			claimView{exists: true, state: subjects.StateRunning, requestSeq: seq, owner: 1, streamSeq: seq, numDelivered: 2}, claimTakeOver},
		{"terminal, owned by an earlier delivery: take over to finish the outbox",
			claimView{exists: true, state: subjects.StateCompleted, requestSeq: seq, owner: 1, streamSeq: seq, numDelivered: 2}, claimTakeOver},
		{"owned by this delivery (claimed, deciding again): finish the outbox",
			claimView{exists: true, state: subjects.StateRunning, requestSeq: seq, owner: 2, streamSeq: seq, numDelivered: 2}, claimOwn},
		{"terminal, owned by this delivery: finish the outbox",
			claimView{exists: true, state: subjects.StateFailed, requestSeq: seq, owner: 2, streamSeq: seq, numDelivered: 2}, claimOwn},
		{"own parked state, redelivered: take it over",
			claimView{exists: true, state: subjects.StatePaused, requestSeq: seq, owner: 1, streamSeq: seq, numDelivered: 2}, claimTakeOver},
		{"the retry the current state scheduled: take it over from its stage",
			claimView{exists: true, state: subjects.StateRunning, requestSeq: other, owner: 1, streamSeq: seq, numDelivered: 1, revision: 6, retryRev: 6}, claimRetry},
		{"the retry the current state scheduled, redelivered after its claim: own it",
			claimView{exists: true, state: subjects.StateRunning, requestSeq: seq, owner: 1, streamSeq: seq, numDelivered: 2, revision: 7, retryRev: 6}, claimTakeOver},
		{"a retry of an older revision: stale, acked",
			claimView{exists: true, state: subjects.StateRunning, requestSeq: other, owner: 2, streamSeq: seq, numDelivered: 1, revision: 7, retryRev: 6}, claimStale},
		{"a retry of a task that ended: stale, acked",
			claimView{exists: true, state: subjects.StateCompleted, requestSeq: other, owner: 1, streamSeq: seq, numDelivered: 1, revision: 6, retryRev: 6}, claimStale},
		{"the request that scheduled the owner's, delivered again: stale, acked",
			claimView{exists: true, state: subjects.StateRunning, requestSeq: other, owner: 1, streamSeq: seq, numDelivered: 2, revision: 7, retryFrom: seq}, claimStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, decideClaim(tc.v))
		})
	}
}

// TestSettled: a terminal state of this request, its outbox finished, is
// acked or termed; a running or parked one goes on.
func TestSettled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		state  string
		reason subjects.Reason
		want   consumers.Outcome
		done   bool
	}{
		{subjects.StateCompleted, "", consumers.Outcome{Action: consumers.Ack, Terminal: subjects.EventTaskCompleted}, true},
		{subjects.StateFailed, subjects.ReasonMaxAttempts, consumers.Outcome{Action: consumers.Term, Terminal: subjects.EventTaskFailed, Reason: subjects.ReasonMaxAttempts}, true},
		{subjects.StateCancelled, "", consumers.Outcome{Action: consumers.Term, Terminal: subjects.EventTaskCancelled}, true},
		{subjects.StateRunning, "", consumers.Outcome{}, false},
		{subjects.StatePaused, "", consumers.Outcome{}, false},
	} {
		t.Run(tc.state, func(t *testing.T) {
			t.Parallel()
			out, done := settled(subjects.TaskState{State: tc.state, Reason: tc.reason})
			assert.Equal(t, tc.done, done)
			assert.Equal(t, tc.want, out)
		})
	}
}

// TestDecidePublish and TestDecideFence cover step 6: a fence that fails is
// examined; if the state's revision is still ours publishing goes on after
// the intruder, else the claim is lost.
func TestDecidePublish(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		dup  bool
		want fenceStep
	}{
		{"stored", nil, false, fenceNext},
		{"a duplicate: someone wrote it first", nil, true, fenceExamine},
		{"wrong last sequence: an intruder", fmt.Errorf("publish: %w", audit.ErrWrongLastSequence), false, fenceExamine},
		{"another error", errors.New("nats: timeout"), false, fenceError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, decidePublish(tc.err, tc.dup))
		})
	}
}

func TestDecideFence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		resyncs   int
		rev, ours uint64
		want      fenceStep
	}{
		{"revision still ours: continue after the intruder", 1, 5, 5, fenceResync},
		{"revision moved on: claim lost", 1, 6, 5, fenceLost},
		{"still ours at the last allowed examination", maxResyncs, 5, 5, fenceResync},
		{"kept failing: give up for now", maxResyncs + 1, 5, 5, fenceGiveUp},
		{"kept failing and moved on: give up for now", maxResyncs + 1, 6, 5, fenceGiveUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, decideFence(tc.resyncs, tc.rev, tc.ours))
		})
	}
}

// TestDecideRoleError covers step 7: permanent -> role_failed, last
// delivery -> max_deliveries, else retry; and what comes first.
func TestDecideRoleError(t *testing.T) {
	t.Parallel()
	live := context.Background()
	stopping, stop := context.WithCancel(context.Background())
	stop()
	lost, lose := context.WithCancelCause(context.Background())
	lose(consumers.ErrClaimLost)
	transient := errors.New("runner: connection reset")
	permanent := fmt.Errorf("openai: 400: %w", runner.ErrPermanent)
	blob := fmt.Errorf("planner: output: %w", errBlobStore)
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		err       error
		delivered uint64
		want      roleStep
	}{
		{"transient, first delivery: retry", live, transient, 1, roleRetry},
		{"transient, next to last delivery: retry", live, transient, 4, roleRetry},
		{"transient, last delivery: max_deliveries", live, transient, 5, roleLastDelivery},
		{"transient, past the last delivery: max_deliveries", live, transient, 6, roleLastDelivery},
		{"permanent: role_failed", live, permanent, 1, roleFail},
		{"permanent on the last delivery: role_failed", live, permanent, 5, roleFail},
		{"blob store down: nak, nothing recorded", live, blob, 1, roleInfra},
		{"blob store down on the last delivery: nak", live, blob, 5, roleInfra},
		{"claim lost (error): abandon", live, fmt.Errorf("judge: not started: %w", consumers.ErrClaimLost), 1, roleAbandon},
		{"claim lost (context): abandon", lost, transient, 1, roleAbandon},
		{"stopping: hand back at once", stopping, transient, 1, roleStopping},
		{"stopping beats permanent", stopping, permanent, 5, roleStopping},
		{"task over budget: fail, never retried", live, fmt.Errorf("judge: not started: %w: %w", runner.ErrPermanent, ledger.ErrTaskBudget), 1, roleFail},
		{"workflow over budget: nak, nothing recorded, parked once paused", live, fmt.Errorf("judge: not started: %w", ledger.ErrWorkflowBudget), 1, roleInfra},
		{"workflow over budget on the last delivery: nak", live, fmt.Errorf("judge: not started: %w", ledger.ErrWorkflowBudget), 5, roleInfra},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, decideRoleError(tc.ctx, tc.err, tc.delivered, 5))
		})
	}
}

// TestTryOf: tries are counted across the requests that schedule retries.
func TestTryOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		base      uint64
		delivered uint64
		want      uint64
	}{
		{"first try", 0, 1, 1},
		{"a redelivery after a crash, no retry yet", 0, 3, 3},
		{"first delivery of the third scheduled retry", 3, 1, 4},
		{"a redelivery of a retry's request after a crash", 3, 2, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, tryOf(tc.base, tc.delivered))
		})
	}
}

// TestBackoff: the nak delay doubles per delivery, capped.
func TestBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    uint64
		want time.Duration
	}{
		{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second},
		{6, 32 * time.Second}, {7, time.Minute}, {50, time.Minute},
	} {
		p := &Pipeline{cfg: Config{RetryBase: time.Second, RetryMax: time.Minute}}
		assert.Equal(t, tc.want, p.backoff(tc.n), "delivery %d", tc.n)
	}
	p := &Pipeline{cfg: Config{RetryBase: 2 * time.Second, RetryMax: 3 * time.Second}}
	assert.Equal(t, 3*time.Second, p.backoff(2), "capped at a max that is not a power of two")
}

// TestDecideGate covers step 8: running or unknown -> run, paused -> park,
// cancelled -> task_cancelled (or workflow_cancelled for a request stored
// after the cancel), states not current -> no role starts.
func TestDecideGate(t *testing.T) {
	t.Parallel()
	cancelledAt := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	before, after := cancelledAt.Add(-time.Minute), cancelledAt.Add(time.Minute)
	running := subjects.WorkflowState{State: subjects.StateRunning}
	paused := subjects.WorkflowState{State: subjects.StatePaused}
	cancelled := subjects.WorkflowState{State: subjects.StateCancelled, UpdatedAt: cancelledAt}
	down := errors.New("workflow gate: the watch is down")
	for _, tc := range []struct {
		name    string
		ws      subjects.WorkflowState
		known   bool
		err     error
		created bool
		stored  time.Time
		want    gateStep
	}{
		{"unknown workflow: run", subjects.WorkflowState{}, false, nil, false, before, gateRun},
		{"running: run", running, true, nil, true, before, gateRun},
		{"paused: park", paused, true, nil, true, before, gatePark},
		{"paused, no state yet: park", paused, true, nil, false, after, gatePark},
		{"cancelled, task underway: task_cancelled", cancelled, true, nil, true, before, gateCancel},
		{"cancelled, task underway, stored after: task_cancelled", cancelled, true, nil, true, after, gateCancel},
		{"cancelled, no state, stored before the cancel: task_cancelled", cancelled, true, nil, false, before, gateCancel},
		{"cancelled, no state, stored after the cancel: workflow_cancelled", cancelled, true, nil, false, after, gateReject},
		{"states not current: blocked", paused, true, down, true, before, gateBlocked},
		{"states not current, unknown workflow: blocked", subjects.WorkflowState{}, false, down, false, before, gateBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, decideGate(tc.ws, tc.known, tc.err, tc.created, tc.stored))
		})
	}
}
