package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// How an outside actor (the review service, a merger, a pull request
// watcher) finishes a task parked in an "awaiting_..." state: each call is
// a compare-and-set on the revision of the state cur it read, carrying its
// audit events (Notes) in the state's outbox, so of two actors deciding
// the same parking exactly one wins; the other gets ErrAlreadyDecided.

var (
	// ErrNotParked: the task is not in the parked state the caller
	// expects (it runs, it ended, or it waits for something else).
	ErrNotParked = errors.New("task is not parked")
	// ErrAlreadyDecided: the task's state moved on since it was read:
	// another actor finished or sent it on first.
	ErrAlreadyDecided = errors.New("already decided")
)

// Note is an audit event an outside actor records with its change of a
// parked task. Its ID is derived from the task, attempt, actor, type and
// the parked state's revision, so a retried write stores it once.
type Note struct {
	Type      subjects.EventType
	Actor     subjects.Actor
	Action    string
	Reasoning string
	Metadata  map[string]any
}

// ReviewDecision is a person's decision on a task awaiting review.
type ReviewDecision struct {
	Decision string    `json:"decision"` // approve or reject
	Reviewer string    `json:"reviewer"`
	Comment  string    `json:"comment,omitempty"`
	At       time.Time `json:"at"`
}

// parkedRun is a task run for a parked state cur, which no message
// carries: the caller acts for it.
func (p *Pipeline) parkedRun(cur state.Task, want string) (*taskRun, error) {
	if cur.State != want || !IsParked(cur.State) {
		return nil, fmt.Errorf("%w: %s/%s is %s, not %s", ErrNotParked, cur.Workflow, cur.Task, cur.State, want)
	}
	var req subjects.TaskRequest
	if err := json.Unmarshal(cur.Request, &req); err != nil {
		req = subjects.TaskRequest{Workflow: cur.Workflow, ID: cur.Task}
	}
	req.Workflow, req.ID = cur.Workflow, cur.Task
	if req.MaxAttempts == 0 {
		req.MaxAttempts = subjects.DefaultMaxAttempts
	}
	return &taskRun{
		d:   consumers.Msg{Queue: cur.Queue, StreamSeq: cur.StreamSeq, NumDelivered: cur.Delivery, Body: cur.Request},
		req: req, st: cur.TaskState, rev: cur.Revision,
	}, nil
}

func (p *Pipeline) notes(t *taskRun, notes []Note) []subjects.OutboxItem {
	items := make([]subjects.OutboxItem, 0, len(notes))
	for _, n := range notes {
		ev := p.event(t, n.Type, n.Actor, t.st.Attempt, t.rev)
		ev.Action, ev.Reasoning = n.Action, boundError(n.Reasoning)
		if len(n.Metadata) > 0 {
			ev.Metadata = mustJSON(n.Metadata)
		}
		items = append(items, item(ev))
	}
	return items
}

func decidedErr(err error) error {
	if errors.Is(err, errLost) {
		return ErrAlreadyDecided
	}
	return err
}

// CompleteParked completes a task parked in state want: task_completed,
// its output the result the delivery parked with plus fields under
// "delivery" (e.g. the target commit holding the change).
func (p *Pipeline) CompleteParked(ctx context.Context, cur state.Task, want string, fields map[string]any, notes ...Note) (state.Task, error) {
	t, err := p.parkedRun(cur, want)
	if err != nil {
		return state.Task{}, err
	}
	res := map[string]any{}
	if len(cur.Result) > 0 {
		full, err := p.expand(ctx, cur.Result)
		if err != nil {
			return state.Task{}, err
		}
		if err := json.Unmarshal(full, &res); err != nil {
			return state.Task{}, fmt.Errorf("%s/%s: parked result: %w", cur.Workflow, cur.Task, err)
		}
	}
	if len(fields) > 0 {
		d, _ := res["delivery"].(map[string]any)
		if d == nil {
			d = map[string]any{}
		}
		for k, v := range fields {
			d[k] = v
		}
		res["delivery"] = d
	}
	result, err := p.shrink(ctx, mustJSON(res))
	if err != nil {
		return state.Task{}, err
	}
	items := append(p.notes(t, notes), p.completedEvent(t, t.st.Attempt, result))
	err = p.commit(ctx, t, func(s *subjects.TaskState) {
		s.State, s.Stage, s.Result, s.Feedback, s.Request = subjects.StateCompleted, subjects.StageDone, result, "", nil
	}, items...)
	if err != nil {
		return state.Task{}, decidedErr(err)
	}
	p.d.Metrics.TaskDone(subjects.EventTaskCompleted)
	return state.Task{TaskState: t.st, Revision: t.rev}, nil
}

// FailParked fails a task parked in state want with reason (a DLQ entry
// of its request, and task_failed).
func (p *Pipeline) FailParked(ctx context.Context, cur state.Task, want string, reason subjects.Reason, text string, notes ...Note) (state.Task, error) {
	t, err := p.parkedRun(cur, want)
	if err != nil {
		return state.Task{}, err
	}
	return p.failParked(ctx, t, reason, text, p.notes(t, notes), func(s *subjects.TaskState) { s.Request = nil })
}

// failParked fails the parked task t with reason, committing keep and
// items with the failure, and returns its state after.
func (p *Pipeline) failParked(ctx context.Context, t *taskRun, reason subjects.Reason, text string, items []subjects.OutboxItem, keep func(*subjects.TaskState)) (state.Task, error) {
	out := p.fail(ctx, t, t.st.Attempt, reason, text, items, keep)
	if out.Action != consumers.Term {
		return state.Task{}, decidedErr(out.Err)
	}
	return state.Task{TaskState: t.st, Revision: t.rev}, nil
}

// RetryParked sends a task parked in state want back to its implementer
// for a new attempt with feedback, exactly like a judge's rejection: the
// attempt continues in a worktree holding the last attempt's commit. With
// base set (a commit), the workspace is pinned again on it and the new
// attempt starts from it (the recorded attempts stay in the audit stream).
// When the parked attempt was the last allowed, the task fails with
// max_attempts instead. kind names the sender in the republished request's
// Nats-Msg-Id (subjects.ParkedMsgID).
func (p *Pipeline) RetryParked(ctx context.Context, cur state.Task, want, kind, feedback, base string, notes ...Note) (state.Task, error) {
	t, err := p.parkedRun(cur, want)
	if err != nil {
		return state.Task{}, err
	}
	if t.st.Attempt >= t.req.MaxAttempts {
		return p.failParked(ctx, t, subjects.ReasonMaxAttempts,
			fmt.Sprintf("attempt %d, the last allowed, was sent back; last feedback: %s", t.st.Attempt, feedback),
			p.notes(t, notes), func(s *subjects.TaskState) { s.Request = nil })
	}
	return p.sendOn(ctx, t, kind, notes, func(s *subjects.TaskState) {
		s.Stage, s.Attempt, s.Feedback, s.Result = string(subjects.RoleImplementer), t.st.Attempt+1, feedback, nil
		if base != "" && s.Workspace != nil {
			s.Workspace = &subjects.TaskWorkspace{Branch: s.Workspace.Branch, Base: base}
		}
	})
}

// DeliverParked sends a task parked in state want (awaiting_review, once
// approved) on to delivery: the worker that takes its request pushes its
// branch and calls the Deliverer.
func (p *Pipeline) DeliverParked(ctx context.Context, cur state.Task, want, kind string, notes ...Note) (state.Task, error) {
	t, err := p.parkedRun(cur, want)
	if err != nil {
		return state.Task{}, err
	}
	return p.sendOn(ctx, t, kind, notes, func(s *subjects.TaskState) { s.Stage = StageDeliver })
}

// sendOn moves a parked task to paused at its next stage, then publishes
// its request again unless its workflow is paused (the workflow's resume
// publishes it) or cancelled (it is cancelled).
func (p *Pipeline) sendOn(ctx context.Context, t *taskRun, kind string, notes []Note, mutate func(*subjects.TaskState)) (state.Task, error) {
	err := p.commit(ctx, t, func(s *subjects.TaskState) {
		mutate(s)
		s.State = subjects.StatePaused
	}, p.notes(t, notes)...)
	if err != nil {
		return state.Task{}, decidedErr(err)
	}
	st := state.Task{TaskState: t.st, Revision: t.rev}
	ws, err := p.d.State.GetWorkflow(ctx, t.req.Workflow)
	switch {
	case err != nil && !errors.Is(err, state.ErrNotFound):
		return st, fmt.Errorf("%s/%s is paused for resumption, but its workflow could not be read (drover workflow pause, then resume, publishes it): %w", t.req.Workflow, t.req.ID, err)
	case err == nil && ws.State == subjects.StatePaused:
		return st, nil
	case err == nil && ws.State == subjects.StateCancelled:
		_, err = p.CancelParked(ctx, st, ws.Reason)
		return st, err
	}
	if err := p.republish(ctx, st, kind); err != nil {
		return st, fmt.Errorf("%w (drover workflow pause %[2]s, then resume %[2]s, publishes it again)", err, t.req.Workflow)
	}
	return st, nil
}

// republish publishes a paused task's request again with
// Nats-Msg-Id ParkedMsgID(kind, revision).
func (p *Pipeline) republish(ctx context.Context, st state.Task, kind string) error {
	if st.State != subjects.StatePaused || len(st.Request) == 0 {
		return nil
	}
	queue := st.Queue
	if queue == "" {
		queue = subjects.DefaultQueue
	}
	msg := &nats.Msg{Subject: p.d.Names.TaskSubject(queue), Header: nats.Header{}, Data: st.Request}
	msg.Header.Set(subjects.HeaderMsgID, subjects.ParkedMsgID(st.Workflow, st.Task, kind, st.Revision))
	msg.Header.Set(subjects.HeaderContract, subjects.ContractVersion)
	if _, err := p.d.JS.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("%s %s/%s: publish: %w", kind, st.Workflow, st.Task, err)
	}
	return nil
}
