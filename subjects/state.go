package subjects

import (
	"encoding/json"
	"time"
)

// Task states in drover_state.
const (
	StateRunning   = "running"
	StatePaused    = "paused"
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateCancelled = "cancelled"
)

// TerminalState reports whether a task state is final.
func TerminalState(s string) bool {
	return s == StateCompleted || s == StateFailed || s == StateCancelled
}

// StageDone is the stage of a task with no role left to run.
const StageDone = "done"

// TaskState is the value of drover_state key <wf>.<task>. The key's KV
// revision is the task's fencing token.
//
// Fields beyond the contract's (queue, stream_seq, delivery, type, tries,
// feedback, reason, result, started_at, outbox) are Drover's own
// bookkeeping; clients may ignore them.
type TaskState struct {
	Workflow string `json:"workflow"`
	Task     string `json:"task"`
	State    string `json:"state"`
	// Stage is the next role to run, or "done".
	Stage   string `json:"stage"`
	Attempt int    `json:"attempt"`
	// Outputs holds per finished role its cache key (or blob reference).
	Outputs map[Role]string `json:"outputs,omitempty"`
	// Request is the original request body, kept while paused.
	Request   json.RawMessage `json:"request,omitempty"`
	UpdatedAt time.Time       `json:"updated_at"`
	Worker    string          `json:"worker"`

	// Queue and StreamSeq name the request message that owns the task.
	Queue     string `json:"queue,omitempty"`
	StreamSeq uint64 `json:"stream_seq,omitempty"`
	// Delivery is the delivery of that message the owner is running.
	Delivery uint64 `json:"delivery,omitempty"`
	// Type is the task type, kept for statistics.
	Type string `json:"type,omitempty"`
	// Tries counts each role's failed tries, so a runner is told which try
	// it is on.
	Tries map[Role]int `json:"tries,omitempty"`
	// TryBase counts the tries of the task that requests before the owning
	// one spent: a role error is retried by a new request scheduled for
	// later, so the delivery limit counts TryBase plus the owning
	// request's deliveries, not the deliveries of one message.
	TryBase uint64 `json:"try_base,omitempty"`
	// RetryFrom is the request that scheduled the owning one: a late
	// redelivery of it is acked without running.
	RetryFrom uint64 `json:"retry_from,omitempty"`
	// Feedback is the judge's last rejection, input to the next round.
	Feedback string `json:"feedback,omitempty"`
	// Reason is the DLQ reason of a failed task.
	Reason Reason `json:"reason,omitempty"`
	// Result is the final output of a completed task.
	Result json.RawMessage `json:"result,omitempty"`
	// Workspace is the task's pinned workspace (workspaces on only).
	Workspace *TaskWorkspace `json:"workspace,omitempty"`
	// Review is the task's review gate record, once it asked for one.
	Review *TaskReview `json:"review,omitempty"`
	// StartedAt is when the task was first picked up.
	StartedAt time.Time `json:"started_at,omitempty"`
	// Outbox holds the audit events (and DLQ entry) committed with this
	// revision. They are published after the revision is written; whoever
	// owns the task next publishes any of them the audit stream lacks.
	Outbox []OutboxItem `json:"outbox,omitempty"`
}

// OutboxItem is an audit event committed with a state revision, or a DLQ
// entry to write before the events that follow it.
type OutboxItem struct {
	Event *OutboxEvent `json:"event,omitempty"`
	DLQ   *DLQIntent   `json:"dlq,omitempty"`
}

// OutboxEvent is an audit event encoded once: its body exactly as it is
// published (base64 in the state's JSON, which costs less to write than
// re-validating embedded JSON), with what its headers need.
type OutboxEvent struct {
	ID       string    `json:"id"`
	Workflow string    `json:"workflow"`
	Task     string    `json:"task"`
	Actor    Actor     `json:"actor"`
	Type     EventType `json:"type"`
	Time     time.Time `json:"time"`
	Body     []byte    `json:"body"`
}

// EncodeEvent normalizes and encodes ev for an outbox.
func EncodeEvent(ev *AuditEvent) (*OutboxEvent, error) {
	ev.Normalize()
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return &OutboxEvent{ID: ev.EventID, Workflow: ev.WorkflowID, Task: ev.TaskID, Actor: ev.Actor, Type: ev.EventType, Time: ev.Timestamp, Body: body}, nil
}

// DLQIntent is a DLQ entry to be written for the owning request.
type DLQIntent struct {
	Reason Reason `json:"reason"`
	Error  string `json:"error"`
}

// WorkflowState is the value of drover_state key <wf>._.
type WorkflowState struct {
	State     string    `json:"state"`
	Reason    string    `json:"reason"`
	UpdatedAt time.Time `json:"updated_at"`
}
