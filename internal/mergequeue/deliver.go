package mergequeue

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// StateAwaitingMerge is the state of a task whose branch waits in its
// target's merge queue.
const StateAwaitingMerge = "awaiting_merge"

// RetryKind names the merge queue in the Nats-Msg-Id of a task it sends
// back (subjects.ParkedMsgID).
const RetryKind = "merge"

// Pusher pushes a branch's head to the remote (workspace.Manager.Push).
type Pusher interface {
	Push(ctx context.Context, branch, head string) error
}

// Deliverer is the pipeline.Deliverer of delivery `merge`: it makes sure
// the approved branch is on the remote, enqueues it for its target and
// parks the task awaiting_merge (no pool slot, no worktree held).
type Deliverer struct {
	JS     jetstream.JetStream
	Names  Names
	Target string
	Push   Pusher // used when the branch was not pushed yet; may be nil
}

// Deliver implements pipeline.Deliverer. It is idempotent: the entry's
// message id is {workflow, task, head}.
func (d Deliverer) Deliver(ctx context.Context, r pipeline.DeliveryRequest) (pipeline.DeliveryResult, error) {
	w := r.Workspace
	if w == nil || w.Head == "" || w.Branch == "" {
		return pipeline.DeliveryResult{}, errors.New("merge: the task has no workspace branch to merge (delivery merge needs workspaces)")
	}
	if !w.Pushed {
		if d.Push == nil {
			return pipeline.DeliveryResult{}, errors.New("merge: the branch was not pushed and there is no pusher")
		}
		if err := d.Push.Push(ctx, w.Branch, w.Head); err != nil {
			return pipeline.DeliveryResult{}, fmt.Errorf("merge: push %s: %w", w.Branch, err)
		}
	}
	e := Entry{Workflow: r.Workflow, Task: r.Task, Branch: w.Branch, Head: w.Head, Attempt: r.Attempt, Target: d.Target}
	if err := Enqueue(ctx, d.JS, d.Names, e); err != nil {
		return pipeline.DeliveryResult{}, err
	}
	return pipeline.Parked(StateAwaitingMerge, map[string]any{
		"merge": map[string]any{"target": d.Target, "branch": w.Branch, "head": w.Head, "queued": true},
	}), nil
}

// PipelineSink finishes parked tasks through the pipeline's delivery hook:
// a merged task completes with output.delivery.merge = {target, commit,
// branch, head}, a culprit goes back to its implementer with the
// feedback, pinned on the new target head.
type PipelineSink struct {
	P     *pipeline.Pipeline
	State *state.Store
}

// current reads e's task and says what becomes of e: merge it when the
// task is parked awaiting_merge with e's attempt; keep it for later while
// the task is on e's attempt but not parked yet; drop it when the task
// moved on (completed by an earlier delivery of the same entry,
// cancelled, failed, a newer attempt queued, or gone from the bucket).
func (s PipelineSink) current(ctx context.Context, e Entry) (state.Task, Want, error) {
	cur, err := s.State.GetTask(ctx, e.Workflow, e.Task)
	if errors.Is(err, state.ErrNotFound) {
		return cur, WantDrop, nil
	}
	if err != nil {
		return cur, WantDrop, err
	}
	return cur, want(cur.TaskState, e), nil
}

// want decides an entry by its task's state.
func want(cur subjects.TaskState, e Entry) Want {
	switch {
	case subjects.TerminalState(cur.State) || cur.Attempt != e.Attempt:
		return WantDrop
	case cur.State == StateAwaitingMerge:
		return WantMerge
	default:
		return WantLater
	}
}

// Wanted implements Sink.
func (s PipelineSink) Wanted(ctx context.Context, e Entry) (Want, error) {
	_, w, err := s.current(ctx, e)
	return w, err
}

// Merged implements Sink.
func (s PipelineSink) Merged(ctx context.Context, e Entry, target, commit string) error {
	cur, w, err := s.current(ctx, e)
	if w != WantMerge || err != nil {
		return err
	}
	_, err = s.P.CompleteParked(ctx, cur, StateAwaitingMerge, map[string]any{
		"merge": map[string]any{"target": target, "commit": commit, "branch": e.Branch, "head": e.Head},
	})
	if errors.Is(err, pipeline.ErrAlreadyDecided) || errors.Is(err, pipeline.ErrNotParked) {
		return nil
	}
	return err
}

// SendBack implements Sink.
func (s PipelineSink) SendBack(ctx context.Context, e Entry, feedback, base string) error {
	cur, w, err := s.current(ctx, e)
	if w != WantMerge || err != nil {
		return err
	}
	_, err = s.P.RetryParked(ctx, cur, StateAwaitingMerge, RetryKind, feedback, base)
	if errors.Is(err, pipeline.ErrAlreadyDecided) || errors.Is(err, pipeline.ErrNotParked) {
		return nil
	}
	return err
}
