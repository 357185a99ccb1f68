package pipeline

import (
	"context"
	"fmt"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// reject ends a request that cannot run: one DLQ entry, one task_rejected
// event, then Term. It is decided on the first delivery and never retried.
func (p *Pipeline) reject(ctx context.Context, d consumers.Msg, rej *subjects.RejectError) consumers.Outcome {
	wf, task := orReserved(rej.Workflow), orReserved(rej.Task)
	log := p.requestLog(d, wf, task)
	if err := p.publishDLQ(ctx, d, rej.Reason, rej.Msg, rej.Workflow, rej.Task); err != nil {
		return p.nakOutcome(log, d, err)
	}
	ev := &subjects.AuditEvent{
		EventID:    subjects.EventID(wf, task, 0, subjects.ActorSystem, subjects.EventTaskRejected, d.StreamSeq),
		EventType:  subjects.EventTaskRejected,
		WorkflowID: wf,
		TaskID:     task,
		Actor:      subjects.ActorSystem,
		Timestamp:  p.cfg.Now().UTC(),
		Action:     string(rej.Reason),
		Status:     subjects.StatusFailure,
		Error:      boundError(rej.Msg),
		Worker:     p.cfg.Worker,
		Input:      mustJSON(map[string]any{"queue": d.Queue, "stream_seq": d.StreamSeq, "bytes": len(d.Body)}),
	}
	if _, err := p.d.Publisher.PublishEvent(ctx, ev, traceparentOf(d), false, 0); err != nil {
		return p.nakOutcome(log, d, err)
	}
	p.d.Metrics.TaskDone(subjects.EventTaskRejected)
	log.Warn("task rejected", "reason", rej.Reason, "err", rej.Msg)
	return consumers.Outcome{Action: consumers.Term, Terminal: subjects.EventTaskRejected, Reason: rej.Reason}
}

// rejectDuplicate rejects a request for a task another request owns.
func (p *Pipeline) rejectDuplicate(ctx context.Context, d consumers.Msg, req subjects.TaskRequest, cur state.Task) consumers.Outcome {
	return p.reject(ctx, d, &subjects.RejectError{
		Reason:   subjects.ReasonDuplicateID,
		Workflow: req.Workflow,
		Task:     req.ID,
		Msg: fmt.Sprintf("task %s is already %s in workflow %s (request %d); a task ID is used once per workflow: submit it again under a new workflow ID, where the cache makes unchanged work free",
			req.ID, cur.State, req.Workflow, cur.StreamSeq),
	})
}

func orReserved(id string) string {
	if id == "" {
		return subjects.Reserved
	}
	return id
}
