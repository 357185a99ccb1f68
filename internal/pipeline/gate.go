package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// Workflows tells a workflow's state; workers keep it current from a KV
// watch, so the gate costs no round trip. A workflow with no state runs.
type Workflows interface {
	// Workflow returns a workflow's state, if it has one. When the states
	// are not known to be current (the watch is down) it waits for them
	// until ctx ends, then returns an error: no role may start.
	Workflow(ctx context.Context, id string) (subjects.WorkflowState, bool, error)
}

// gateWait bounds a role's wait for current workflow states; the delivery
// is then retried later.
const gateWait = 10 * time.Second

// noWait is a context already done: Workflow with it answers at once.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// workflow is a workflow's state, waiting up to gateWait while the states
// are not current. It asks without waiting first: the states are current
// nearly always, and a timer per role is then a cost for nothing.
func (p *Pipeline) workflow(ctx context.Context, id string) (subjects.WorkflowState, bool, error) {
	if ws, ok, err := p.d.Workflows.Workflow(noWait, id); err == nil {
		return ws, ok, nil
	}
	wctx, cancel := context.WithTimeout(ctx, gateWait)
	defer cancel()
	return p.d.Workflows.Workflow(wctx, id)
}

// gate is checked before every role: a paused workflow parks the task (its
// progress and request kept in its state, its message acked), a cancelled
// one ends it with task_cancelled. pending and keep carry a round's finished
// implementer result, so parking between two roles loses nothing.
func (p *Pipeline) gate(ctx context.Context, t *taskRun, pending []subjects.OutboxItem, keep func(*subjects.TaskState)) (consumers.Outcome, bool) {
	if p.d.Workflows == nil {
		return consumers.Outcome{}, false
	}
	ws, ok, err := p.workflow(ctx, t.req.Workflow)
	switch decideGate(ws, ok, err, t.rev != 0, t.d.Timestamp) {
	case gateBlocked:
		if ctx.Err() != nil { // stopping: hand the task back at once
			return consumers.Outcome{Action: consumers.Nak, Err: err}, true
		}
		return p.nakOutcome(p.taskLog(t, ""), t.d, err), true
	case gatePark:
		return p.park(ctx, t, pending, keep), true
	case gateReject:
		// Submitted after the cancel: a rejection, not a cancellation.
		return p.reject(ctx, t.d, &subjects.RejectError{Reason: subjects.ReasonWorkflowCancelled,
			Workflow: t.req.Workflow, Task: t.req.ID, Msg: "workflow " + t.req.Workflow + " is cancelled: " + ws.Reason}), true
	case gateCancel:
		return p.cancel(ctx, t, ws.Reason, pending, keep), true
	}
	return consumers.Outcome{}, false
}

// park stops the task where it stands: state paused with its request, so
// resume can publish it again and continue from the exact role.
func (p *Pipeline) park(ctx context.Context, t *taskRun, pending []subjects.OutboxItem, keep func(*subjects.TaskState)) consumers.Outcome {
	err := p.commit(ctx, t, func(s *subjects.TaskState) {
		if keep != nil {
			keep(s)
		}
		s.State, s.Request = subjects.StatePaused, json.RawMessage(t.d.Body)
	}, pending...)
	if errors.Is(err, errCreateConflict) {
		if out, done := p.reclaim(ctx, t); done {
			return out
		}
		return p.park(ctx, t, pending, keep)
	}
	if err != nil {
		return p.errOutcome(t, err)
	}
	p.taskLog(t, "").Info("task parked: its workflow is paused", "stage", t.st.Stage)
	p.settleParked(ctx, t)
	return consumers.Outcome{Action: consumers.Ack}
}

// cancel ends the task with task_cancelled.
func (p *Pipeline) cancel(ctx context.Context, t *taskRun, reason string, pending []subjects.OutboxItem, keep func(*subjects.TaskState)) consumers.Outcome {
	ev := p.event(t, subjects.EventTaskCancelled, subjects.ActorSystem, t.st.Attempt, 0)
	ev.Action = "cancelled"
	ev.Reasoning = reason
	ev.DurationMS = p.sinceStart(t)
	err := p.commit(ctx, t, func(s *subjects.TaskState) {
		if keep != nil {
			keep(s)
		}
		s.State, s.Stage, s.Request = subjects.StateCancelled, subjects.StageDone, nil
	}, append(pending, item(ev))...)
	if errors.Is(err, errCreateConflict) {
		if out, done := p.reclaim(ctx, t); done {
			return out
		}
		return p.cancel(ctx, t, reason, pending, keep)
	}
	if err != nil {
		return p.errOutcome(t, err)
	}
	p.d.Metrics.TaskDone(subjects.EventTaskCancelled)
	return consumers.Outcome{Action: consumers.Term, Terminal: subjects.EventTaskCancelled}
}

// CancelParked ends a paused or parked (awaiting_...) task of a cancelled workflow, from its state
// cur as just read: it has no message to carry it, so the controller does
// it. A task that is not parked (or already ended) is left to its owner and
// reported as not cancelled; one whose state moved on since cur loses the
// compare-and-set and is reported with the error.
func (p *Pipeline) CancelParked(ctx context.Context, cur state.Task, reason string) (bool, error) {
	workflow, task := cur.Workflow, cur.Task
	if cur.State != subjects.StatePaused && !IsParked(cur.State) {
		return false, nil
	}
	var req subjects.TaskRequest
	if err := json.Unmarshal(cur.Request, &req); err != nil {
		req = subjects.TaskRequest{Workflow: workflow, ID: task}
	}
	req.Workflow, req.ID = workflow, task
	t := &taskRun{
		d:   consumers.Msg{Queue: cur.Queue, StreamSeq: cur.StreamSeq, NumDelivered: cur.Delivery, Body: cur.Request},
		req: req, st: cur.TaskState, rev: cur.Revision,
	}
	out := p.cancel(ctx, t, reason, nil, nil)
	if out.Action != consumers.Term {
		return false, out.Err
	}
	return true, nil
}
