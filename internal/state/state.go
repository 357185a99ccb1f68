// Package state keeps task and workflow state in the drover_state KV
// bucket. A task key's revision is its fencing token: every change is a
// compare-and-set on the revision its writer read, so a worker that lost its
// claim learns it at its next write.
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// ErrNotFound is returned for a task or workflow with no state yet.
var ErrNotFound = errors.New("state: not found")

// ErrConflict is returned when a compare-and-set loses: somebody else wrote
// the key since its revision was read. For a task it means the claim is lost.
var ErrConflict = errors.New("state: revision conflict")

// Store reads and writes drover_state.
type Store struct {
	kv jetstream.KeyValue
}

// New returns a Store on the drover_state bucket.
func New(kv jetstream.KeyValue) *Store { return &Store{kv: kv} }

// Task is a task's state with its revision.
type Task struct {
	subjects.TaskState
	Revision uint64
}

// GetTask reads a task's state; ErrNotFound when the task was never picked up.
func (s *Store) GetTask(ctx context.Context, workflow, task string) (Task, error) {
	e, err := s.kv.Get(ctx, subjects.StateKey(workflow, task))
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return Task{}, ErrNotFound
		}
		return Task{}, fmt.Errorf("state: get %s/%s: %w", workflow, task, err)
	}
	var t Task
	if err := json.Unmarshal(e.Value(), &t.TaskState); err != nil {
		return Task{}, fmt.Errorf("state: %s/%s holds invalid JSON: %w", workflow, task, err)
	}
	t.Revision = e.Revision()
	return t, nil
}

// CreateTask writes a task's first state; ErrConflict when it exists.
func (s *Store) CreateTask(ctx context.Context, st subjects.TaskState) (Task, error) {
	b, err := encodeTask(&st)
	if err != nil {
		return Task{}, err
	}
	rev, err := s.kv.Create(ctx, subjects.StateKey(st.Workflow, st.Task), b)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return Task{}, ErrConflict
		}
		return Task{}, fmt.Errorf("state: create %s/%s: %w", st.Workflow, st.Task, err)
	}
	return Task{TaskState: st, Revision: rev}, nil
}

// UpdateTask replaces a task's state if its revision is still rev;
// ErrConflict otherwise.
func (s *Store) UpdateTask(ctx context.Context, st subjects.TaskState, rev uint64) (Task, error) {
	b, err := encodeTask(&st)
	if err != nil {
		return Task{}, err
	}
	next, err := s.kv.Update(ctx, subjects.StateKey(st.Workflow, st.Task), b, rev)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			return Task{}, ErrConflict
		}
		return Task{}, fmt.Errorf("state: update %s/%s: %w", st.Workflow, st.Task, err)
	}
	return Task{TaskState: st, Revision: next}, nil
}

// encodeTask encodes st for its KV value.
func encodeTask(st *subjects.TaskState) ([]byte, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("state: encode %s/%s: %w", st.Workflow, st.Task, err)
	}
	return b, nil
}

// Workflow is a workflow's state with its revision.
type Workflow struct {
	subjects.WorkflowState
	Revision uint64
}

// GetWorkflow reads a workflow's state; ErrNotFound when it has none
// (a workflow with no state is running).
func (s *Store) GetWorkflow(ctx context.Context, workflow string) (Workflow, error) {
	e, err := s.kv.Get(ctx, subjects.WorkflowKey(workflow))
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return Workflow{}, ErrNotFound
		}
		return Workflow{}, fmt.Errorf("state: get workflow %s: %w", workflow, err)
	}
	var w Workflow
	if err := json.Unmarshal(e.Value(), &w.WorkflowState); err != nil {
		return Workflow{}, fmt.Errorf("state: workflow %s holds invalid JSON: %w", workflow, err)
	}
	w.Revision = e.Revision()
	return w, nil
}

// WriteWorkflow writes a workflow's state by compare-and-set: created when
// rev is 0, else replaced if its revision is still rev. It returns the new
// revision; ErrConflict when another writer got there first.
func (s *Store) WriteWorkflow(ctx context.Context, workflow string, ws subjects.WorkflowState, rev uint64) (uint64, error) {
	b, err := json.Marshal(ws)
	if err != nil {
		return 0, fmt.Errorf("state: encode workflow %s: %w", workflow, err)
	}
	var next uint64
	if rev == 0 {
		next, err = s.kv.Create(ctx, subjects.WorkflowKey(workflow), b)
	} else {
		next, err = s.kv.Update(ctx, subjects.WorkflowKey(workflow), b, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return 0, ErrConflict
	}
	if err != nil {
		return 0, fmt.Errorf("state: write workflow %s: %w", workflow, err)
	}
	return next, nil
}
