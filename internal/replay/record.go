// Package replay re-runs a recorded workflow from its audit record: a
// replay serves every role from the record (no model is called), and a
// counterfactual runs one role again with a new runner on exactly the
// inputs it had, every other role being served from the record. The
// re-run is a workflow of its own, marked in its tasks' metadata as a
// replay or counterfactual of the original; nothing is written to the
// original's record.
package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/subjects"
)

// ErrNoRecord is returned when a workflow has no replayable task.
var ErrNoRecord = errors.New("no recorded task")

// Step identifies one role call of a task: the role and its round.
type Step struct {
	Role    subjects.Role
	Attempt int
}

// Output is one role's recorded result.
type Output struct {
	Output    json.RawMessage `json:"output"`
	Action    string          `json:"action"`
	Reasoning string          `json:"reasoning"`
	// Feedback is the judge's feedback the implementer had (its input).
	Feedback string          `json:"feedback,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Outcome is how a task ended.
type Outcome struct {
	// Type is the terminal event (task_completed, task_failed, ...); ""
	// while the task has not ended.
	Type subjects.EventType `json:"type"`
	// Reason is the action of a task_failed or task_cancelled event.
	Reason   string          `json:"reason,omitempty"`
	Attempts int             `json:"attempts"`
	Output   json.RawMessage `json:"output,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// Task is one task's record.
type Task struct {
	// Request is the request as accepted (defaults applied).
	Request subjects.TaskRequest
	// Outputs are the role results, by step.
	Outputs map[Step]Output
	// Outcome is the task's terminal event.
	Outcome Outcome
	// Accepted is when the task was accepted (its task_accepted event).
	Accepted time.Time
}

// Record is a workflow's recorded history.
type Record struct {
	Workflow string
	// Tasks by ID; Order lists the IDs in the order they were accepted.
	Tasks map[string]*Task
	Order []string
	// Events is how many events the workflow has and LastSeq the audit
	// sequence of the last one.
	Events  int
	LastSeq uint64
	// Rejected counts requests rejected before acceptance (task_rejected):
	// they have no accepted request to replay.
	Rejected int
}

// Expander expands blob references in a recorded value (blobs.Store).
type Expander interface {
	Expand(ctx context.Context, raw json.RawMessage) (json.RawMessage, error)
}

// Load reads the record of workflow wf from the audit stream, through a
// subject-filtered replay: only wf's events are read. Values stored as
// blobs are expanded when ex is not nil.
func Load(ctx context.Context, js jetstream.JetStream, names subjects.Names, wf string, ex Expander) (*Record, error) {
	rec := &Record{Workflow: wf, Tasks: map[string]*Task{}}
	err := audit.Replay(ctx, js, names, audit.Query{Workflow: wf}, func(r audit.Record) error {
		rec.Events++
		rec.LastSeq = r.Seq
		if r.Err != nil {
			return nil
		}
		return rec.add(ctx, &r.Event, ex)
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// add folds one event into the record.
func (rec *Record) add(ctx context.Context, e *subjects.AuditEvent, ex Expander) error {
	if e.TaskID == subjects.Reserved {
		return nil
	}
	expand := func(raw json.RawMessage) (json.RawMessage, error) {
		if ex == nil || len(raw) == 0 {
			return raw, nil
		}
		return ex.Expand(ctx, raw)
	}
	if e.EventType == subjects.EventTaskRejected {
		rec.Rejected++
		return nil
	}
	t := rec.Tasks[e.TaskID]
	if e.EventType == subjects.EventTaskAccepted {
		if t != nil {
			return nil // the first acceptance opens the record
		}
		in, err := expand(e.Input)
		if err != nil {
			return fmt.Errorf("task %s: request: %w", e.TaskID, err)
		}
		var req subjects.TaskRequest
		if err := json.Unmarshal(in, &req); err != nil {
			return fmt.Errorf("task %s: request in event %s: %w", e.TaskID, e.EventID, err)
		}
		rec.Tasks[e.TaskID] = &Task{Request: req, Outputs: map[Step]Output{}, Accepted: e.Timestamp}
		rec.Order = append(rec.Order, e.TaskID)
		return nil
	}
	if t == nil {
		return nil // an event of a task accepted before the record starts
	}
	switch e.EventType {
	case subjects.EventPlannerDecision, subjects.EventImplementerChange, subjects.EventJudgeVerdict:
		out, err := expand(e.Output)
		if err != nil {
			return fmt.Errorf("task %s: %s output: %w", e.TaskID, e.EventType, err)
		}
		var in struct {
			Feedback string `json:"feedback"`
		}
		_ = json.Unmarshal(e.Input, &in)
		t.Outputs[Step{Role: subjects.Role(e.Actor), Attempt: e.Attempt}] = Output{
			Output: out, Action: e.Action, Reasoning: e.Reasoning, Feedback: in.Feedback, Metadata: e.Metadata,
		}
	case subjects.EventTaskCompleted, subjects.EventTaskFailed, subjects.EventTaskCancelled:
		out, err := expand(e.Output)
		if err != nil {
			return fmt.Errorf("task %s: result: %w", e.TaskID, err)
		}
		o := Outcome{Type: e.EventType, Attempts: e.Attempt, Output: out, Error: e.Error}
		if e.EventType != subjects.EventTaskCompleted {
			o.Reason = e.Action
		}
		t.Outcome = o
	}
	return nil
}

// sameJSON reports whether two JSON values are equal up to white space.
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
