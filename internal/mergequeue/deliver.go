package mergequeue

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/state"
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
// a merged task completes with output.delivery.merge = {target, commit},
// a culprit goes back to its implementer with the feedback, pinned on the
// new target head.
type PipelineSink struct {
	P     *pipeline.Pipeline
	State *state.Store
}

// current reads e's task and reports whether it still waits for e: parked
// awaiting_merge with e's attempt. A task that moved on (completed by an
// earlier delivery of the same entry, cancelled, a newer attempt queued)
// is done with, and the entry is acked.
func (s PipelineSink) current(ctx context.Context, e Entry) (state.Task, bool, error) {
	cur, err := s.State.GetTask(ctx, e.Workflow, e.Task)
	if errors.Is(err, state.ErrNotFound) {
		return cur, false, nil
	}
	if err != nil {
		return cur, false, err
	}
	return cur, cur.State == StateAwaitingMerge && cur.Attempt == e.Attempt, nil
}

// Wanted implements Sink.
func (s PipelineSink) Wanted(ctx context.Context, e Entry) (bool, error) {
	_, ok, err := s.current(ctx, e)
	return ok, err
}

// Merged implements Sink.
func (s PipelineSink) Merged(ctx context.Context, e Entry, target, commit string) error {
	cur, ok, err := s.current(ctx, e)
	if !ok || err != nil {
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
	cur, ok, err := s.current(ctx, e)
	if !ok || err != nil {
		return err
	}
	_, err = s.P.RetryParked(ctx, cur, StateAwaitingMerge, RetryKind, feedback, base)
	if errors.Is(err, pipeline.ErrAlreadyDecided) || errors.Is(err, pipeline.ErrNotParked) {
		return nil
	}
	return err
}
