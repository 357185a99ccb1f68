// Package workflow controls workflows: their state in drover_state
// ("<wf>._"), the control requests on drover.ctl.workflow.<wf>.<action>
// (pause, resume, cancel), and the views `drover workflow status|list`
// read.
package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// Gate keeps every workflow's state in memory from a watch on the
// drover_state keys "*._", so the pipeline can check it before every role
// without a round trip. It implements pipeline.Workflows.
type Gate struct {
	mu     sync.RWMutex
	states map[string]subjects.WorkflowState
	log    *slog.Logger
}

// StartGate watches the workflow keys until ctx ends. It returns once the
// current states are loaded, so no task starts before a pause is known; the
// returned channel closes when the watch has stopped.
func StartGate(ctx context.Context, kv jetstream.KeyValue, log *slog.Logger) (*Gate, <-chan struct{}, error) {
	w, err := kv.Watch(ctx, "*."+subjects.Reserved)
	if err != nil {
		return nil, nil, fmt.Errorf("workflow gate: watch: %w", err)
	}
	g := &Gate{states: map[string]subjects.WorkflowState{}, log: log}
	loaded := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = w.Stop() }()
		initial := true
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil { // the end of the current values
					if initial {
						initial = false
						close(loaded)
					}
					continue
				}
				g.apply(e)
			}
		}
	}()
	select {
	case <-loaded:
		return g, done, nil
	case <-done:
		return nil, nil, fmt.Errorf("workflow gate: watch ended before the current states loaded: %w", ctx.Err())
	}
}

func (g *Gate) apply(e jetstream.KeyValueEntry) {
	id, err := subjects.ParseToken(strings.TrimSuffix(e.Key(), "."+subjects.Reserved))
	if err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(g.states, id)
		return
	}
	var ws subjects.WorkflowState
	if err := json.Unmarshal(e.Value(), &ws); err != nil {
		g.log.Warn("workflow state is not valid JSON; treating the workflow as running", "workflow", id, "err", err)
		delete(g.states, id)
		return
	}
	g.states[id] = ws
}

// Workflow returns a workflow's state, if it has one.
func (g *Gate) Workflow(id string) (subjects.WorkflowState, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	ws, ok := g.states[id]
	return ws, ok
}
