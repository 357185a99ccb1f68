package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// The pipeline's decisions, as pure functions of what it has read: the
// claim (docs/architecture.md, "A task's walk", step 3), a failed fence
// (step 6), a role error (step 7) and the workflow gate (step 8). The code
// around them does the reads and writes.

// claimStep is what a delivery does with the task's state.
type claimStep int

const (
	// claimFresh: no state, first delivery; nothing is written yet, the
	// first commit creates the state.
	claimFresh claimStep = iota
	// claimCreate: no state, a redelivery; create it at once, so that an
	// earlier stalled delivery is fenced out.
	claimCreate
	// claimDuplicate: the state of another request; reject duplicate_id.
	claimDuplicate
	// claimResume: a parked state of another request (published again by
	// resume); take it over and continue from its stage.
	claimResume
	// claimAbandon: a later delivery owns the task; send nothing.
	claimAbandon
	// claimTakeOver: an earlier delivery owns the task; take it over by
	// compare-and-set, then publish what its last owner did not.
	claimTakeOver
	// claimOwn: this delivery owns the state already (it claimed it, then
	// decides again); publish what it did not yet.
	claimOwn
	// claimRetry: the retry scheduled by the task's current state
	// (task_retried); take the task over and run it from its stage.
	claimRetry
	// claimStale: a request the task has moved on from: a retry scheduled
	// by an older revision, or the request that scheduled the current
	// owner, delivered again. Ack it, writing nothing.
	claimStale
)

// claimView is what the claim decides on: the task's state as read, if
// any, and this delivery.
type claimView struct {
	exists       bool
	state        string // the state's state: running, paused, completed, ...
	requestSeq   uint64 // stream sequence of the request that owns the state
	owner        uint64 // delivery number of the state's owner
	streamSeq    uint64 // this delivery's request
	numDelivered uint64 // this delivery's number
	revision     uint64 // the state's revision
	retryFrom    uint64 // the request that scheduled the owner's, if any
	retryRev     uint64 // this request's Drover-Retry header (0: none)
}

func decideClaim(v claimView) claimStep {
	switch {
	case !v.exists && v.numDelivered <= 1:
		return claimFresh
	case !v.exists:
		return claimCreate
	case v.requestSeq != v.streamSeq && v.retryRev != 0 && v.retryRev == v.revision && v.state == subjects.StateRunning:
		return claimRetry
	case v.requestSeq != v.streamSeq && (v.retryRev != 0 || v.streamSeq == v.retryFrom):
		return claimStale
	case v.requestSeq != v.streamSeq && v.state == subjects.StatePaused:
		return claimResume
	case v.requestSeq != v.streamSeq:
		return claimDuplicate
	case v.owner > v.numDelivered:
		return claimAbandon
	case v.owner < v.numDelivered:
		return claimTakeOver
	}
	return claimOwn
}

// settled is the outcome of a task whose state is terminal, or parked for
// an outside actor (its outbox published): ok=false while it runs or is
// paused.
func settled(st subjects.TaskState) (consumers.Outcome, bool) {
	switch st.State {
	case subjects.StateCompleted:
		return consumers.Outcome{Action: consumers.Ack, Terminal: subjects.EventTaskCompleted}, true
	case subjects.StateFailed:
		return consumers.Outcome{Action: consumers.Term, Terminal: subjects.EventTaskFailed, Reason: st.Reason}, true
	case subjects.StateCancelled:
		return consumers.Outcome{Action: consumers.Term, Terminal: subjects.EventTaskCancelled}, true
	}
	if IsParked(st.State) { // a redelivery of the message that parked it
		return consumers.Outcome{Action: consumers.Ack}, true
	}
	return consumers.Outcome{}, false
}

// fenceStep is what publishing an outbox item does next.
type fenceStep int

const (
	// fenceNext: the item is out; publish the next one.
	fenceNext fenceStep = iota
	// fenceExamine: the fence failed (another event came first) or the
	// item was a duplicate; read the state to see whose the task is.
	fenceExamine
	// fenceError: publishing failed; the error decides.
	fenceError
	// fenceResync: the state is still ours: the intruder was a foreign
	// event or an item a stalled owner wrote; go on after it.
	fenceResync
	// fenceLost: the state moved on: the claim is lost.
	fenceLost
	// fenceGiveUp: the fence kept failing; retry the delivery later.
	fenceGiveUp
)

// maxResyncs bounds the fence failures one flush examines.
const maxResyncs = 8

// decidePublish is the step after publishing an outbox item.
func decidePublish(err error, duplicate bool) fenceStep {
	switch {
	case err == nil && !duplicate:
		return fenceNext
	case err == nil || errors.Is(err, audit.ErrWrongLastSequence):
		return fenceExamine
	}
	return fenceError
}

// decideFence examines a failed fence: resyncs is how many this flush has
// examined, this one included; rev is the state's revision as just read,
// ours the one this delivery wrote.
func decideFence(resyncs int, rev, ours uint64) fenceStep {
	switch {
	case resyncs > maxResyncs:
		return fenceGiveUp
	case rev != ours:
		return fenceLost
	}
	return fenceResync
}

// tryOf is the number of the task's try a delivery runs: the tries earlier
// requests of the task spent (their retries scheduled this one) plus this
// request's delivery number. The delivery limit and the task_retried
// event's number use it.
func tryOf(tryBase, numDelivered uint64) uint64 {
	return tryBase + numDelivered
}

// roleStep is what a role error means for the task.
type roleStep int

const (
	// roleAbandon: the claim is lost; send nothing.
	roleAbandon roleStep = iota
	// roleStopping: the worker is stopping; keep what the round finished
	// and hand the message back at once.
	roleStopping
	// roleInfra: not the role's failure (its output could not be kept);
	// nak with backoff, recording nothing.
	roleInfra
	// roleFail: a permanent error; the task fails with role_failed.
	roleFail
	// roleLastDelivery: the last allowed delivery; the task fails with
	// max_deliveries.
	roleLastDelivery
	// roleRetry: commit task_retried and schedule the request again
	// after the backoff (a new message; this one is acked).
	roleRetry
)

// decideRoleError decides on a role's error err on try (tryOf); ctx is the
// task's.
func decideRoleError(ctx context.Context, err error, try uint64, maxDeliver int) roleStep {
	switch {
	case errors.Is(err, consumers.ErrClaimLost) || errors.Is(context.Cause(ctx), consumers.ErrClaimLost):
		return roleAbandon
	case ctx.Err() != nil:
		return roleStopping
	case errors.Is(err, errBlobStore), errors.Is(err, ledger.ErrWorkflowBudget):
		return roleInfra
	case errors.Is(err, runner.ErrPermanent):
		return roleFail
	case try >= uint64(maxDeliver):
		return roleLastDelivery
	}
	return roleRetry
}

// gateStep is what the workflow gate lets a task do before a role.
type gateStep int

const (
	// gateRun: the workflow runs, or has no state; run the role.
	gateRun gateStep = iota
	// gatePark: the workflow is paused; park the task.
	gatePark
	// gateCancel: the workflow is cancelled; end the task with
	// task_cancelled.
	gateCancel
	// gateReject: the workflow was cancelled before this request was
	// stored and the task has no state; reject it (workflow_cancelled).
	gateReject
	// gateBlocked: the workflow states are not known to be current (the
	// gate's watch is down); start no role, retry the delivery later.
	gateBlocked
)

// decideGate decides on the workflow's state ws (known: it has one; err:
// the states are not current). created tells whether the task's state
// exists; stored is when the server stored the request.
func decideGate(ws subjects.WorkflowState, known bool, err error, created bool, stored time.Time) gateStep {
	switch {
	case err != nil:
		return gateBlocked
	case !known:
		return gateRun
	case ws.State == subjects.StatePaused:
		return gatePark
	case ws.State == subjects.StateCancelled && !created && stored.After(ws.UpdatedAt):
		return gateReject
	case ws.State == subjects.StateCancelled:
		return gateCancel
	}
	return gateRun
}
