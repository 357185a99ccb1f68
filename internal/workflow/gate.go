// Package workflow controls workflows: their state in drover_state
// ("<wf>._"), the control requests on drover.ctl.workflow.<wf>.<action>
// (pause, resume, cancel), and the views `drover workflow status|list`
// read.
package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/subjects"
)

// ErrWatchDown is the error of a gate whose watch closed and is not back
// yet: the states it holds may be stale, so no role may start on them.
var ErrWatchDown = errors.New("workflow gate: the watch of workflow states is down")

// Gate keeps every workflow's state in memory from a watch on the
// drover_state keys "*._", so the pipeline can check it before every role
// without a round trip. It implements pipeline.Workflows.
//
// When the watch closes (the server restarted, the bucket's stream moved),
// the gate reports ErrWatchDown, holds every caller of Workflow, and
// watches again with backoff; the new watch reloads every state, so no
// update made while it was down is missed.
type Gate struct {
	kv  jetstream.KeyValue
	log *slog.Logger

	mu     sync.RWMutex
	states map[string]subjects.WorkflowState
	down   error         // nil while the watch runs
	up     chan struct{} // closed when the watch runs again
	w      jetstream.KeyWatcher

	// hold, when set (tests only), is received from before each new watch.
	hold <-chan struct{}
}

// rewatchBackoff is the gate's delay before watch try n after its watch
// closed: 100ms, doubling, capped at 5s.
var rewatchBackoff = backoff.Policy{Base: 100 * time.Millisecond, Max: 5 * time.Second}

// StartGate watches the workflow keys until ctx ends. It returns once the
// current states are loaded, so no task starts before a pause is known; the
// returned channel closes when the watch has stopped for good.
func StartGate(ctx context.Context, kv jetstream.KeyValue, log *slog.Logger) (*Gate, <-chan struct{}, error) {
	return startGate(ctx, kv, log, nil)
}

func startGate(ctx context.Context, kv jetstream.KeyValue, log *slog.Logger, hold <-chan struct{}) (*Gate, <-chan struct{}, error) {
	g := &Gate{kv: kv, log: log, states: map[string]subjects.WorkflowState{}, up: make(chan struct{}), hold: hold}
	w, err := g.watch(ctx)
	if err != nil {
		return nil, nil, err
	}
	loaded := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.run(ctx, w, loaded)
	}()
	select {
	case <-loaded:
		return g, done, nil
	case <-done:
		return nil, nil, fmt.Errorf("workflow gate: watch ended before the current states loaded: %w", ctx.Err())
	}
}

func (g *Gate) watch(ctx context.Context) (jetstream.KeyWatcher, error) {
	w, err := g.kv.Watch(ctx, "*."+subjects.Reserved)
	if err != nil {
		return nil, fmt.Errorf("workflow gate: watch: %w", err)
	}
	g.mu.Lock()
	g.w = w
	g.mu.Unlock()
	return w, nil
}

// run follows the watch, and each new one after it closes, until ctx ends.
// loaded is closed once the first watch has loaded the current states; if
// that watch closes before, run returns.
func (g *Gate) run(ctx context.Context, w jetstream.KeyWatcher, loaded chan struct{}) {
	first := true
	for {
		g.follow(ctx, w, func() {
			if first {
				first = false
				close(loaded)
			}
		})
		_ = w.Stop()
		if ctx.Err() != nil || first {
			return
		}
		g.setDown()
		g.log.Warn("workflow gate: the watch of workflow states closed; no role starts until it is back")
		if w = g.rewatch(ctx); w == nil {
			return
		}
	}
}

// follow applies the watch's updates until it closes or ctx ends. The
// initial values are gathered apart and replace the gate's states at once,
// then loaded is called; later updates apply one by one.
func (g *Gate) follow(ctx context.Context, w jetstream.KeyWatcher, loaded func()) {
	fresh := map[string]subjects.WorkflowState{}
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
					g.setUp(fresh)
					loaded()
				}
				continue
			}
			if initial {
				g.apply(fresh, e)
				continue
			}
			g.mu.Lock()
			g.apply(g.states, e)
			g.mu.Unlock()
		}
	}
}

// rewatch watches again, with doubling delays, until it succeeds (the new
// watcher) or ctx ends (nil).
func (g *Gate) rewatch(ctx context.Context) jetstream.KeyWatcher {
	for try := 1; ; try++ {
		if g.hold != nil {
			select {
			case <-g.hold:
			case <-ctx.Done():
				return nil
			}
		} else if backoff.Sleep(ctx, rewatchBackoff.Delay(try)) != nil {
			return nil
		}
		w, err := g.watch(ctx)
		if err == nil {
			g.log.Info("workflow gate: watching workflow states again")
			return w
		}
		g.log.Warn("workflow gate: could not watch again; retrying", "err", err, "in", rewatchBackoff.Delay(try+1))
	}
}

func (g *Gate) setDown() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down == nil {
		g.down = ErrWatchDown
		g.up = make(chan struct{})
	}
}

// setUp replaces every state with those just loaded and lets callers on.
func (g *Gate) setUp(states map[string]subjects.WorkflowState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.states, g.down = states, nil
	select {
	case <-g.up:
	default:
		close(g.up)
	}
}

// apply records one update in states; the caller holds g.mu if states is
// the gate's own.
func (g *Gate) apply(states map[string]subjects.WorkflowState, e jetstream.KeyValueEntry) {
	id, err := subjects.ParseToken(strings.TrimSuffix(e.Key(), "."+subjects.Reserved))
	if err != nil {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(states, id)
		return
	}
	var ws subjects.WorkflowState
	if err := json.Unmarshal(e.Value(), &ws); err != nil {
		g.log.Warn("workflow state is not valid JSON; treating the workflow as running", "workflow", id, "err", err)
		delete(states, id)
		return
	}
	states[id] = ws
}

// Workflow returns a workflow's state, if it has one. While the watch is
// down it waits for it to be back, until ctx ends: then it returns
// ErrWatchDown, and the caller must not start a role.
func (g *Gate) Workflow(ctx context.Context, id string) (subjects.WorkflowState, bool, error) {
	for {
		g.mu.RLock()
		down, up := g.down, g.up
		ws, ok := g.states[id]
		g.mu.RUnlock()
		if down == nil {
			return ws, ok, nil
		}
		select {
		case <-up:
		case <-ctx.Done():
			return subjects.WorkflowState{}, false, down
		}
	}
}

// Err reports whether the gate's states are current (nil) or why not
// (ErrWatchDown): the worker's readiness reports it.
func (g *Gate) Err() error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.down
}
