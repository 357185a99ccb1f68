package pipeline

import (
	"context"

	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// Republish publishes a parked task's request again, with Nats-Msg-Id
// "<wf>/<task>/resume/<revision>", so the worker that takes it continues
// from the exact role where it stopped. Two publishers of the same parking
// (the controller and the worker that parked it) store one message.
func (p *Pipeline) Republish(ctx context.Context, st state.Task) error {
	return p.republish(ctx, st, "resume")
}

// settleParked closes the race between parking a task and a control action
// that listed the workflow's tasks just before: after parking, the worker
// reads the workflow's state itself and, if it is running again, publishes
// the task for resumption, or if it is cancelled, cancels it.
func (p *Pipeline) settleParked(ctx context.Context, t *taskRun) {
	ws, err := p.d.State.GetWorkflow(ctx, t.req.Workflow)
	if err != nil && err != state.ErrNotFound {
		p.taskLog(t, "").Warn("parked task: could not re-read its workflow", "err", err)
		return
	}
	switch {
	case err == state.ErrNotFound || ws.State == subjects.StateRunning:
		if err := p.Republish(ctx, state.Task{TaskState: t.st, Revision: t.rev}); err != nil {
			p.taskLog(t, "").Warn("parked task: could not publish it for resumption", "err", err)
		}
	case ws.State == subjects.StateCancelled:
		if _, err := p.CancelParked(ctx, state.Task{TaskState: t.st, Revision: t.rev}, ws.Reason); err != nil {
			p.taskLog(t, "").Warn("parked task: could not cancel it", "err", err)
		}
	}
}
