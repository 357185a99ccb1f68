package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/subjects"
)

// roleFailed decides what a role error means for the task. pending holds
// events of this round not yet committed and keep records their progress in
// the state, so that a retry does not lose them.
func (p *Pipeline) roleFailed(ctx context.Context, t *taskRun, role subjects.Role, attempt int, err error, dur time.Duration,
	pending []subjects.OutboxItem, keep func(*subjects.TaskState)) consumers.Outcome {
	try := tryOf(t.st.TryBase, t.d.NumDelivered)
	switch decideRoleError(ctx, err, try, p.cfg.MaxDeliver) {
	case roleAbandon:
		return consumers.Outcome{Action: consumers.Abandon, Err: err}
	case roleStopping:
		// Keep what this round finished, then hand the task back at
		// once so another worker takes it without waiting.
		if len(pending) > 0 {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if cerr := p.commit(cctx, t, keep, pending...); cerr != nil {
				return p.errOutcome(t, cerr)
			}
		}
		return consumers.Outcome{Action: consumers.Nak, Delay: 0, Err: err}
	case roleInfra:
		// Not the role's failure: its output could not be kept. Retry
		// later, like any infrastructure error, recording nothing.
		return p.nakOutcome(p.taskLog(t, role), t.d, err)
	case roleFail:
		return p.fail(ctx, t, attempt, failReason(err), err.Error(), pending, keep)
	case roleLastDelivery:
		return p.fail(ctx, t, attempt, subjects.ReasonMaxDeliveries, err.Error(), pending, keep)
	}
	items := append(pending, p.retriedEvent(t, role, attempt, err, dur, try))
	cerr := p.commit(ctx, t, func(s *subjects.TaskState) {
		if keep != nil {
			keep(s)
		}
		if s.Tries == nil {
			s.Tries = map[subjects.Role]int{}
		}
		s.Tries[role]++
	}, items...)
	if errors.Is(cerr, errCreateConflict) {
		if out, done := p.reclaim(ctx, t); done {
			return out
		}
		return p.nakOutcome(p.taskLog(t, ""), t.d, err)
	}
	if cerr != nil {
		return p.errOutcome(t, cerr)
	}
	delay := p.backoff(try)
	if serr := p.scheduleRetry(ctx, t, delay); serr != nil {
		// The retry is committed; a redelivery of this message takes
		// the task over and runs it.
		p.taskLog(t, role).Warn("role failed; could not schedule its retry, handing the message back", "err", err, "schedule_err", serr)
		return consumers.Outcome{Action: consumers.Nak, Delay: delay, Err: err}
	}
	p.taskLog(t, role).Info("role failed; retry scheduled", "err", err, "retry_in", delay)
	return consumers.Outcome{Action: consumers.Ack, Err: err}
}

// fail ends the task as failed: state, DLQ entry, task_failed, then Term.
func (p *Pipeline) fail(ctx context.Context, t *taskRun, attempt int, reason subjects.Reason, text string,
	pending []subjects.OutboxItem, keep func(*subjects.TaskState)) consumers.Outcome {
	items := append(pending, p.failedEvents(t, attempt, reason, text)...)
	err := p.commit(ctx, t, func(s *subjects.TaskState) {
		if keep != nil {
			keep(s)
		}
		s.State, s.Stage, s.Reason = subjects.StateFailed, subjects.StageDone, reason
	}, items...)
	if errors.Is(err, errCreateConflict) {
		if out, done := p.reclaim(ctx, t); done {
			return out
		}
		return p.nakOutcome(p.taskLog(t, ""), t.d, errors.New("task state appeared while failing it"))
	}
	if err != nil {
		return p.errOutcome(t, err)
	}
	p.d.Metrics.TaskDone(subjects.EventTaskFailed)
	p.learn(ctx, t, failedRole(t), attempt, string(reason), text, "", subjects.EventTaskFailed)
	p.taskLog(t, failedRole(t)).Warn("task failed", "reason", reason, "err", text)
	return consumers.Outcome{Action: consumers.Term, Terminal: subjects.EventTaskFailed, Reason: reason}
}

// failedRole is the role a failed task was at: its stage, or the judge when
// it failed after its last verdict.
func failedRole(t *taskRun) subjects.Role {
	if r := subjects.Role(t.st.Stage); r.Valid() {
		return r
	}
	return subjects.RoleJudge
}
