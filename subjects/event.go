package subjects

import (
	"encoding/json"
	"time"
)

// Role is one of the three roles a task goes through.
type Role string

// The roles, in the order a task meets them.
const (
	RolePlanner     Role = "planner"
	RoleImplementer Role = "implementer"
	RoleJudge       Role = "judge"
)

// Roles lists the roles in pipeline order.
var Roles = []Role{RolePlanner, RoleImplementer, RoleJudge}

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool {
	return r == RolePlanner || r == RoleImplementer || r == RoleJudge
}

// Actor is who wrote an audit event: a role, or the system.
type Actor string

// ActorSystem writes the events that are not a role's result.
const ActorSystem Actor = "system"

// ActorHuman writes the events of a person's decision (review_decided).
const ActorHuman Actor = "human"

// ActorOf returns the actor of a role's events.
func ActorOf(r Role) Actor { return Actor(r) }

// EventType is the last token of an audit subject.
type EventType string

// The audit event types of contract version 1.
const (
	EventTaskAccepted      EventType = "task_accepted"
	EventPlannerDecision   EventType = "planner_decision"
	EventImplementerChange EventType = "implementer_change"
	EventJudgeVerdict      EventType = "judge_verdict"
	EventTaskRetried       EventType = "task_retried"
	EventTaskCompleted     EventType = "task_completed"
	EventTaskFailed        EventType = "task_failed"
	EventTaskCancelled     EventType = "task_cancelled"
	EventTaskRejected      EventType = "task_rejected"
	EventWorkflowPaused    EventType = "workflow_paused"
	EventWorkflowResumed   EventType = "workflow_resumed"
	EventWorkflowCancelled EventType = "workflow_cancelled"
)

// EventTypes lists every event type of contract version 1.
var EventTypes = []EventType{
	EventTaskAccepted, EventPlannerDecision, EventImplementerChange, EventJudgeVerdict,
	EventTaskRetried, EventTaskCompleted, EventTaskFailed, EventTaskCancelled,
	EventTaskRejected, EventWorkflowPaused, EventWorkflowResumed, EventWorkflowCancelled,
}

// Terminal reports whether an event ends a request: task_completed,
// task_failed, task_cancelled or task_rejected.
func (t EventType) Terminal() bool {
	switch t {
	case EventTaskCompleted, EventTaskFailed, EventTaskCancelled, EventTaskRejected:
		return true
	}
	return false
}

// Valid reports whether t is an event type of this contract version.
func (t EventType) Valid() bool {
	for _, e := range EventTypes {
		if e == t {
			return true
		}
	}
	return false
}

// RoleEvent is the event type a role writes when it succeeds.
func RoleEvent(r Role) EventType {
	switch r {
	case RolePlanner:
		return EventPlannerDecision
	case RoleImplementer:
		return EventImplementerChange
	default:
		return EventJudgeVerdict
	}
}

// Status of an audit event.
const (
	StatusSuccess = "success"
	StatusFailure = "failure"
	StatusPending = "pending"
)

// Judge verdicts, carried in a judge_verdict event's action.
const (
	VerdictApprove = "approve"
	VerdictReject  = "reject"
)

// AuditEvent is the JSON body of an audit event. Its fields keep the names
// and meanings of the JSONL audit log Drover replaces.
type AuditEvent struct {
	EventID    string          `json:"event_id"`
	EventType  EventType       `json:"event_type"`
	WorkflowID string          `json:"workflow_id"`
	TaskID     string          `json:"task_id"`
	Actor      Actor           `json:"actor"`
	Attempt    int             `json:"attempt"`
	Timestamp  time.Time       `json:"timestamp"`
	Action     string          `json:"action"`
	Reasoning  string          `json:"reasoning"`
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	Status     string          `json:"status"`
	Error      string          `json:"error"`
	Cached     bool            `json:"cached"`
	DurationMS int64           `json:"duration_ms"`
	Worker     string          `json:"worker"`
	Metadata   json.RawMessage `json:"metadata"`
}

// emptyObject is what an absent input, output or metadata is written as.
var emptyObject = json.RawMessage("{}")

// Normalize fills absent raw fields with {} so every event has the same
// shape on the wire.
func (e *AuditEvent) Normalize() {
	if len(e.Input) == 0 {
		e.Input = emptyObject
	}
	if len(e.Output) == 0 {
		e.Output = emptyObject
	}
	if len(e.Metadata) == 0 {
		e.Metadata = emptyObject
	}
}
