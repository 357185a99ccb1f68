package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// TaskRow is one task in a workflow's status.
type TaskRow struct {
	Task      string        `json:"task"`
	State     string        `json:"state"`
	Stage     string        `json:"stage"`
	Attempt   int           `json:"attempt"`
	Worker    string        `json:"worker"`
	Reason    string        `json:"reason,omitempty"`
	StartedAt time.Time     `json:"started_at"`
	UpdatedAt time.Time     `json:"updated_at"`
	Took      time.Duration `json:"took_ns"`
}

// Status is a workflow's state and its tasks'.
type Status struct {
	Workflow string                 `json:"workflow"`
	State    subjects.WorkflowState `json:"state"`
	Tasks    []TaskRow              `json:"tasks"`
	Counts   map[string]int         `json:"counts"`
}

// Summary is one workflow in a list.
type Summary struct {
	Workflow string         `json:"workflow"`
	State    string         `json:"state"`
	Tasks    int            `json:"tasks"`
	Counts   map[string]int `json:"counts"`
	Updated  time.Time      `json:"updated_at"`
}

// Scan reads the task and workflow states of one workflow ("" for all) in
// one pass over the bucket, with a key filter, and calls fn for each.
func Scan(ctx context.Context, kv jetstream.KeyValue, workflow string, fn func(wf, task string, value []byte)) error {
	filter := ">"
	if workflow != "" {
		filter = subjects.Token(workflow) + ".*"
	}
	w, err := kv.Watch(ctx, filter, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("scan %s: %w", kv.Bucket(), err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok || e == nil {
				return nil
			}
			wfTok, taskTok, found := strings.Cut(e.Key(), ".")
			if !found {
				continue
			}
			wf, err1 := subjects.ParseToken(wfTok)
			task, err2 := subjects.ParseToken(taskTok)
			if err1 != nil || err2 != nil {
				continue
			}
			fn(wf, task, e.Value())
		}
	}
}

// GetStatus returns a workflow's status.
func GetStatus(ctx context.Context, kv jetstream.KeyValue, workflow string) (Status, error) {
	st := Status{Workflow: workflow, State: subjects.WorkflowState{State: subjects.StateRunning}, Counts: map[string]int{}}
	err := Scan(ctx, kv, workflow, func(_, task string, v []byte) {
		if task == subjects.Reserved {
			_ = json.Unmarshal(v, &st.State)
			return
		}
		var ts subjects.TaskState
		if json.Unmarshal(v, &ts) != nil {
			return
		}
		st.Counts[ts.State]++
		st.Tasks = append(st.Tasks, TaskRow{Task: task, State: ts.State, Stage: ts.Stage, Attempt: ts.Attempt, Worker: ts.Worker,
			Reason: string(ts.Reason), StartedAt: ts.StartedAt, UpdatedAt: ts.UpdatedAt, Took: ts.UpdatedAt.Sub(ts.StartedAt)})
	})
	sort.Slice(st.Tasks, func(i, j int) bool { return st.Tasks[i].Task < st.Tasks[j].Task })
	return st, err
}

// List returns every workflow with its task counts by state.
func List(ctx context.Context, kv jetstream.KeyValue) ([]Summary, error) {
	by := map[string]*Summary{}
	get := func(wf string) *Summary {
		s, ok := by[wf]
		if !ok {
			s = &Summary{Workflow: wf, State: subjects.StateRunning, Counts: map[string]int{}}
			by[wf] = s
		}
		return s
	}
	err := Scan(ctx, kv, "", func(wf, task string, v []byte) {
		s := get(wf)
		if task == subjects.Reserved {
			var ws subjects.WorkflowState
			if json.Unmarshal(v, &ws) == nil {
				s.State = ws.State
			}
			return
		}
		var ts subjects.TaskState
		if json.Unmarshal(v, &ts) != nil {
			return
		}
		s.Tasks++
		s.Counts[ts.State]++
		if ts.UpdatedAt.After(s.Updated) {
			s.Updated = ts.UpdatedAt
		}
	})
	out := make([]Summary, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Workflow < out[j].Workflow })
	return out, err
}
