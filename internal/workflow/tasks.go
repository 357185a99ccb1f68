package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/subjects"
)

// record writes the action's audit event (with who asked, when known, as
// metadata "actor"), fenced on the workflow's own
// audit subjects; its event ID makes a retried write store once.
func (c *Controller) record(ctx context.Context, wf, target, reason, actor string, rev uint64) error {
	et, n := subjects.EventWorkflowPaused, rev
	switch target {
	case subjects.StateRunning:
		et = subjects.EventWorkflowResumed
	case subjects.StateCancelled:
		et, n = subjects.EventWorkflowCancelled, 0
	}
	ev := &subjects.AuditEvent{
		EventID: subjects.EventID(wf, subjects.Reserved, 0, subjects.ActorSystem, et, n), EventType: et,
		WorkflowID: wf, TaskID: subjects.Reserved, Actor: subjects.ActorSystem, Timestamp: c.now().UTC(),
		Action: target, Reasoning: reason, Status: subjects.StatusSuccess,
		Metadata: mustJSON(map[string]any{"revision": rev}),
	}
	if actor != "" {
		ev.Metadata = mustJSON(map[string]any{"revision": rev, "actor": actor})
	}
	for range 8 {
		seq, _, err := c.pub.LastSeq(ctx, c.audit, wf, subjects.Reserved)
		if err != nil {
			return err
		}
		_, err = c.pub.PublishEvent(ctx, ev, "", true, seq)
		if !errors.Is(err, audit.ErrWrongLastSequence) {
			return err
		}
	}
	return fmt.Errorf("workflow %s: audit %s: the workflow's events kept moving", wf, et)
}

// settleTasks acts on the workflow's parked tasks.
func (c *Controller) settleTasks(ctx context.Context, wf, action, reason string) error {
	if action == ActionPause {
		return nil // running tasks park themselves at their next role
	}
	tasks, err := c.tasks(ctx, wf)
	if err != nil {
		return err
	}
	for _, id := range tasks {
		st, err := c.store.GetTask(ctx, wf, id)
		if err != nil || (st.State != subjects.StatePaused && !pipeline.IsParked(st.State)) {
			continue // parked (awaiting review, merge, ...) tasks are cancelled too
		}
		switch action {
		case ActionResume:
			err = c.pipe.Republish(ctx, st)
		case ActionCancel:
			_, err = c.pipe.CancelParked(ctx, st, reason)
		}
		if err != nil {
			return fmt.Errorf("workflow %s: %s task %s: %w", wf, action, id, err)
		}
	}
	return nil
}

// tasks lists the IDs of the workflow's tasks that have state.
func (c *Controller) tasks(ctx context.Context, wf string) ([]string, error) {
	lister, err := c.kv.ListKeysFiltered(ctx, subjects.Token(wf)+".*")
	if err != nil {
		return nil, fmt.Errorf("workflow %s: list tasks: %w", wf, err)
	}
	defer func() { _ = lister.Stop() }()
	var out []string
	for key := range lister.Keys() {
		tok := key[len(subjects.Token(wf))+1:]
		if tok == subjects.Reserved {
			continue
		}
		if id, err := subjects.ParseToken(tok); err == nil {
			out = append(out, id)
		}
	}
	return out, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
