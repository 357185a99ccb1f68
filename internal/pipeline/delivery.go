package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/subjects"
)

// DeliveryMode says what happens to an approved task's branch.
type DeliveryMode string

// The delivery modes.
const (
	// DeliveryBranch: the branch is pushed (when pushing is configured) and
	// the task completes. The default, and what a nil Deliverer does.
	DeliveryBranch DeliveryMode = "branch"
	// DeliveryMerge: the branch enters its target's merge queue.
	DeliveryMerge DeliveryMode = "merge"
	// DeliveryPullRequest: a pull request is opened for the branch.
	DeliveryPullRequest DeliveryMode = "pull_request"
)

// Valid reports whether m is a known mode.
func (m DeliveryMode) Valid() bool {
	return m == DeliveryBranch || m == DeliveryMerge || m == DeliveryPullRequest
}

// StageDeliver is the stage of an approved task whose delivery is next: a
// task approved by a person continues from it on whichever worker takes
// its request.
const StageDeliver = "deliver"

// ErrDeliveryRejected marks a delivery error as permanent: the task fails
// with the DeliveryError's reason (a DLQ entry, for that task only). Any
// other error is retried with backoff like a role error.
var ErrDeliveryRejected = errors.New("delivery rejected")

// DeliveryError is a permanent delivery failure with its DLQ reason (for
// example "pr_failed"). It matches ErrDeliveryRejected.
type DeliveryError struct {
	Reason subjects.Reason
	Err    error
}

func (e *DeliveryError) Error() string { return string(e.Reason) + ": " + e.Err.Error() }

// Unwrap returns ErrDeliveryRejected and the cause.
func (e *DeliveryError) Unwrap() []error { return []error{ErrDeliveryRejected, e.Err} }

// DeliveryRequest is what a Deliverer is told about an approved task. Its
// texts are untrusted (agent output): bound what you copy of them.
type DeliveryRequest struct {
	Workflow, Task string
	Queue          string
	// Request is the task's request as submitted.
	Request subjects.TaskRequest
	// Attempt is the approved attempt.
	Attempt int
	// Plan, Change and Verdict are the planner's, implementer's and
	// judge's outputs (Verdict is nil when a person judged instead).
	Plan, Change, Verdict json.RawMessage
	// Review is the person's decision, when the review gate asked for one
	// (nil otherwise).
	Review *ReviewDecision
	// Workspace is the branch and its approved head, and whether it was
	// pushed (nil without workspaces).
	Workspace *subjects.WorkspaceResult
}

// DeliveryResult is what a delivery did.
type DeliveryResult struct {
	// Fields go into the task_completed output under "delivery" (e.g. a
	// pull request's URL, or the target commit), or, when the task is
	// parked, into its state's result until it is finished.
	Fields map[string]any
	// Park, when not empty, parks the task in this state ("awaiting_...")
	// instead of completing it.
	Park string
}

// Delivered completes the task now.
func Delivered(fields map[string]any) DeliveryResult { return DeliveryResult{Fields: fields} }

// Parked parks the task in state until an outside actor finishes it
// (CompleteParked, RetryParked, FailParked).
func Parked(state string, fields map[string]any) DeliveryResult {
	return DeliveryResult{Park: state, Fields: fields}
}

// Deliverer delivers approved tasks.
type Deliverer interface {
	// Deliver is called once the task is approved (by the judge, and by a
	// person when the review gate asks for one), after the branch is
	// pushed when pushing is configured. It may be called again for the
	// same task (a redelivery after a crash): it must be idempotent.
	Deliver(ctx context.Context, d DeliveryRequest) (DeliveryResult, error)
}

// parkedState is the form of a state a task is parked in by delivery or
// review: "awaiting_" and a lower-case word.
var parkedState = regexp.MustCompile(`^awaiting_[a-z][a-z_]{0,30}$`)

// IsParked reports whether a task state is one an outside actor finishes
// (awaiting_review, awaiting_merge, ...). A paused task is not: its
// workflow's resume takes it on.
func IsParked(state string) bool { return parkedState.MatchString(state) }

// deliverApproved pushes an approved task's branch and hands it to the
// Deliverer, then completes, parks or fails the task. items and keep carry
// what the round finished.
func (p *Pipeline) deliverApproved(ctx context.Context, t *taskRun, a approved, items []subjects.OutboxItem, keep func(*subjects.TaskState)) consumers.Outcome {
	round := a.attempt
	if (t.ws != nil && t.change != nil) || p.d.Deliverer != nil {
		// The delivery has side effects: the verdict and the head it
		// delivers are recorded first, so a crash from here on runs no
		// role again, and a redelivery's push is leased on the heads
		// recorded.
		if err := p.recordDelivery(ctx, t, items, keep); err != nil {
			return p.errOutcome(t, err)
		}
		items, keep, a.retryItems, a.retryKeep = nil, nil, nil, nil
	}
	pushed, err := p.pushWorkspace(ctx, t)
	switch {
	case errors.Is(err, ErrPushRejected):
		return p.fail(ctx, t, round, subjects.ReasonPushRejected, err.Error(), items, keep)
	case err != nil:
		// Stopping, or the push cannot be waited for: keep what the round
		// recorded; the next delivery decides again.
		return p.roleFailed(ctx, t, subjects.RoleJudge, round, err, 0, a.retryItems, a.retryKeep)
	}
	markPushed := func(s *subjects.TaskState) {
		if pushed != nil && pushed.Pushed && s.Workspace != nil {
			w := *s.Workspace
			w.Pushed = true
			s.Workspace = &w
		}
	}
	var dres DeliveryResult
	if p.d.Deliverer != nil {
		if pushed != nil && pushed.Pushed && t.st.Workspace != nil && !t.st.Workspace.Pushed {
			// The push is a step done: a redelivery goes straight to the
			// Deliverer, which finds what it made before.
			if err := p.commitAhead(ctx, t, markPushed); err != nil {
				return p.errOutcome(t, err)
			}
		}
		dr := DeliveryRequest{Workflow: t.req.Workflow, Task: t.req.ID, Queue: t.d.Queue, Request: t.req,
			Attempt: round, Plan: t.plan, Change: a.change, Verdict: a.verdict, Review: a.review, Workspace: pushed}
		dres, err = p.d.Deliverer.Deliver(ctx, dr)
		var de *DeliveryError
		switch {
		case errors.As(err, &de):
			return p.fail(ctx, t, round, de.Reason, boundError(err.Error()), items, keep)
		case err != nil:
			return p.roleFailed(ctx, t, subjects.RoleJudge, round, fmt.Errorf("delivery: %w", err), 0, a.retryItems, a.retryKeep)
		case dres.Park != "" && !IsParked(dres.Park):
			return p.roleFailed(ctx, t, subjects.RoleJudge, round, fmt.Errorf("delivery: cannot park in state %q", dres.Park), 0, a.retryItems, a.retryKeep)
		}
	}
	fields := map[string]any{"change": a.change, "attempts": round}
	if a.verdict != nil {
		fields["verdict"] = a.verdict
	}
	if a.review != nil {
		fields["review"] = a.review
	}
	if pushed != nil {
		fields["workspace"] = pushed
	}
	if len(dres.Fields) > 0 {
		fields["delivery"] = dres.Fields
	}
	result, err := p.shrink(ctx, mustJSON(fields))
	if err != nil {
		return p.nakOutcome(p.taskLog(t, ""), t.d, err)
	}
	if dres.Park != "" {
		return p.parkFor(ctx, t, dres.Park, items, func(s *subjects.TaskState) {
			if keep != nil {
				keep(s)
			}
			markPushed(s)
			s.Stage, s.Result = StageDeliver, result
		})
	}
	items = append(items, p.completedEvent(t, round, result))
	err = p.commit(ctx, t, func(s *subjects.TaskState) {
		if keep != nil {
			keep(s)
		}
		s.State, s.Stage, s.Result, s.Feedback = subjects.StateCompleted, subjects.StageDone, result, ""
		markPushed(s)
	}, items...)
	if err != nil {
		return p.errOutcome(t, err)
	}
	p.d.Metrics.TaskDone(subjects.EventTaskCompleted)
	return consumers.Outcome{Action: consumers.Ack, Terminal: subjects.EventTaskCompleted}
}

// approved is an approved round on its way to delivery.
type approved struct {
	attempt         int
	change, verdict json.RawMessage
	review          *ReviewDecision
	// What a retry keeps: the implementer's recorded change, not the
	// verdict, which the next delivery gives again before it pushes.
	retryItems []subjects.OutboxItem
	retryKeep  func(*subjects.TaskState)
}

// parkFor parks the task in a state an outside actor finishes: its request
// kept in its state, its message acked, no worktree held.
func (p *Pipeline) parkFor(ctx context.Context, t *taskRun, st string, items []subjects.OutboxItem, keep func(*subjects.TaskState)) consumers.Outcome {
	// The worktree goes first: once the state is written, a decision may
	// send the task on at once, and the worker that takes it (this one,
	// maybe) opens the branch again. The branch and its commits stay.
	p.releaseWorkspace(ctx, t, consumers.Outcome{})
	err := p.commit(ctx, t, func(s *subjects.TaskState) {
		if keep != nil {
			keep(s)
		}
		s.State, s.Request = st, json.RawMessage(t.d.Body)
	}, items...)
	if errors.Is(err, errCreateConflict) {
		if out, done := p.reclaim(ctx, t); done {
			return out
		}
		return p.parkFor(ctx, t, st, items, keep)
	}
	if err != nil {
		return p.errOutcome(t, err)
	}
	p.taskLog(t, "").Info("task parked", "state", st)
	return consumers.Outcome{Action: consumers.Ack}
}

// deliverStage delivers an approved task whose verdict is recorded: one
// approved while parked (by a person), or one whose delivery a crash or a
// retry cut short. The worktree is rebuilt from the pinned base and the
// recorded change, then the branch is pushed (leased on the heads recorded
// before) and delivered; a push recorded as done is not made again.
func (p *Pipeline) deliverStage(ctx context.Context, t *taskRun) consumers.Outcome {
	plan, err := p.output(ctx, t, subjects.RolePlanner, t.plan)
	if err != nil {
		return p.nakOutcome(p.taskLog(t, ""), t.d, err)
	}
	t.plan = plan
	change, err := p.output(ctx, t, subjects.RoleImplementer, nil)
	if err != nil {
		return p.nakOutcome(p.taskLog(t, ""), t.d, err)
	}
	var verdict json.RawMessage
	if t.st.Outputs[subjects.RoleJudge] != "" {
		if verdict, err = p.output(ctx, t, subjects.RoleJudge, nil); err != nil {
			return p.nakOutcome(p.taskLog(t, ""), t.d, err)
		}
	}
	if w := t.st.Workspace; w == nil || !w.Pushed || w.Head() == "" {
		// Not pushed yet: the worktree is rebuilt to push its head (a
		// head recorded as pushed is delivered as it is).
		if err := p.openWorkspace(ctx, t); err != nil {
			return p.roleFailed(ctx, t, subjects.RoleJudge, t.st.Attempt, roleErr(subjects.RoleJudge, err), 0, nil, nil)
		}
	}
	a := approved{attempt: t.st.Attempt, change: change, verdict: verdict, review: t.review()}
	return p.deliverApproved(ctx, t, a, nil, nil)
}

// recordDelivery commits, before a delivery's side effects, what the
// round has not committed yet (the verdict) with the stage deliver and,
// in a workspace, the head to deliver appended to the recorded heads.
// Nothing is written when all of it is recorded already.
func (p *Pipeline) recordDelivery(ctx context.Context, t *taskRun, items []subjects.OutboxItem, keep func(*subjects.TaskState)) error {
	head := ""
	if t.ws != nil && t.change != nil {
		h, err := t.ws.Head(ctx)
		if err != nil {
			return fmt.Errorf("workspace: head: %w", err)
		}
		head = h
	}
	if len(items) == 0 && keep == nil && t.st.Stage == StageDeliver && head == t.st.Workspace.Head() {
		return nil
	}
	return p.commitAhead(ctx, t, func(s *subjects.TaskState) {
		if keep != nil {
			keep(s)
		}
		s.Stage = StageDeliver
		if head == "" {
			return
		}
		w := s.Workspace
		if w == nil {
			w = t.pinned()
		}
		c := *w
		if c.Head() != head {
			c.Heads = append(slices.Clip(c.Heads), head)
			c.Pushed = false
		}
		s.Workspace = &c
	}, items...)
}
