package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// event starts an audit event of the task.
func (p *Pipeline) event(t *taskRun, et subjects.EventType, actor subjects.Actor, attempt int, n uint64) *subjects.AuditEvent {
	return &subjects.AuditEvent{
		EventID:    subjects.EventID(t.req.Workflow, t.req.ID, attempt, actor, et, n),
		EventType:  et,
		WorkflowID: t.req.Workflow,
		TaskID:     t.req.ID,
		Actor:      actor,
		Attempt:    attempt,
		Timestamp:  p.cfg.Now().UTC(),
		Status:     subjects.StatusSuccess,
		Worker:     p.cfg.Worker,
	}
}

// item encodes an event for the outbox, once: the state holds these bytes
// and the audit stream receives them unchanged.
func item(ev *subjects.AuditEvent) subjects.OutboxItem {
	oe, err := subjects.EncodeEvent(ev)
	if err != nil { // only raw JSON fields that do not parse get here
		ev.Input, ev.Output, ev.Metadata = nil, nil, mustJSON(map[string]string{"encode_error": err.Error()})
		oe, _ = subjects.EncodeEvent(ev)
	}
	return subjects.OutboxItem{Event: oe}
}

// acceptedEvent is task_accepted, with the request as its input. It fails
// only when a large field of the request cannot be stored as a blob.
func (p *Pipeline) acceptedEvent(ctx context.Context, t *taskRun) (subjects.OutboxItem, error) {
	input, err := p.shrink(ctx, mustJSON(&t.req))
	if err != nil {
		return subjects.OutboxItem{}, err
	}
	ev := p.event(t, subjects.EventTaskAccepted, subjects.ActorSystem, 1, 0)
	ev.Timestamp = t.st.StartedAt // when this worker picked the task up
	ev.Action = "accepted"
	ev.Input = input
	ev.Metadata = deliveryMetadata(t.d.Queue, t.d.StreamSeq)
	return item(ev), nil
}

// roleEvent records a role's success.
func (p *Pipeline) roleEvent(t *taskRun, rr roleResult) subjects.OutboxItem {
	ev := p.event(t, subjects.RoleEvent(rr.role), subjects.ActorOf(rr.role), rr.attempt, 0)
	ev.Action = rr.res.Action
	ev.Reasoning = rr.res.Reasoning
	ev.Input = rr.input
	ev.Output = rr.stored
	ev.Cached = rr.cached
	ev.DurationMS = rr.dur.Milliseconds()
	if md := p.eventMetadata(rr); len(md) > 0 {
		ev.Metadata = mustJSON(md)
	}
	return item(ev)
}

// retriedEvent records a role failure that will be retried.
// try numbers it (tryOf): the event's ID ends in it.
func (p *Pipeline) retriedEvent(t *taskRun, role subjects.Role, attempt int, err error, dur time.Duration, try uint64) subjects.OutboxItem {
	ev := p.event(t, subjects.EventTaskRetried, subjects.ActorOf(role), attempt, try)
	ev.Action = "retry"
	ev.Status = subjects.StatusFailure
	ev.Error = boundError(err.Error())
	ev.DurationMS = dur.Milliseconds()
	ev.Metadata = mustJSON(map[string]any{"delivery": t.d.NumDelivered, "try": try, "retry_in_ms": p.backoff(try).Milliseconds()})
	return item(ev)
}

// completedEvent ends the task with its final result.
func (p *Pipeline) completedEvent(t *taskRun, attempt int, result json.RawMessage) subjects.OutboxItem {
	ev := p.event(t, subjects.EventTaskCompleted, subjects.ActorSystem, attempt, 0)
	ev.Action = "completed"
	ev.Output = result
	ev.DurationMS = p.sinceStart(t)
	return item(ev)
}

// failedEvents end the task as failed: its DLQ entry, then task_failed.
func (p *Pipeline) failedEvents(t *taskRun, attempt int, reason subjects.Reason, text string) []subjects.OutboxItem {
	ev := p.event(t, subjects.EventTaskFailed, subjects.ActorSystem, attempt, 0)
	ev.Action = string(reason)
	ev.Status = subjects.StatusFailure
	ev.Error = boundError(text)
	ev.DurationMS = p.sinceStart(t)
	return []subjects.OutboxItem{
		{DLQ: &subjects.DLQIntent{Reason: reason, Error: boundError(text)}},
		item(ev),
	}
}

// boundError keeps error text bounded in events and headers.
func boundError(s string) string {
	return redact.Clip(s, 4<<10, "...(truncated)")
}

// roleInput is a role event's input: {"attempt", "cache_key", "feedback"
// (when there is one)}, keys sorted as the map it once was.
func roleInput(attempt int, key, feedback string) json.RawMessage {
	return mustJSON(struct {
		Attempt  int    `json:"attempt"`
		CacheKey string `json:"cache_key"`
		Feedback string `json:"feedback,omitempty"`
	}{attempt, key, feedback})
}

// deliveryMetadata is task_accepted's metadata: {"queue", "stream_seq"}.
func deliveryMetadata(queue string, seq uint64) json.RawMessage {
	return mustJSON(struct {
		Queue     string `json:"queue"`
		StreamSeq uint64 `json:"stream_seq"`
	}{queue, seq})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// errBlobStore marks a large value that could not be stored as a blob: an
// infrastructure error, retried later like any other. Nothing stands in for
// the value: no event, state or cache entry is written without it.
var errBlobStore = errors.New("blob store")

// shrink stores oversized fields as blobs and returns the value with
// references in their place; an error wraps errBlobStore.
func (p *Pipeline) shrink(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if p.d.Blobs == nil {
		return raw, nil
	}
	out, err := p.d.Blobs.Shrink(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %d bytes not stored: %w", errBlobStore, len(raw), err)
	}
	return out, nil
}
