package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/subjects"
)

// entries calls fn with every current value of kv, in one pass.
func entries(ctx context.Context, kv jetstream.KeyValue, fn func(jetstream.KeyValueEntry) error) error {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }() // the watch is done with
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watcher closed")
			}
			if e == nil { // all current values seen
				return nil
			}
			if err := fn(e); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// state removes old terminal task keys, then idle workflow keys, and notes
// the blobs that kept keys refer to.
func (r *run) state(ctx context.Context) error {
	type wfKey struct {
		e     jetstream.KeyValueEntry
		state string
	}
	workflows := map[string]wfKey{} // by workflow token
	tasksLeft := map[string]int{}   // kept task keys per workflow token
	var old []jetstream.KeyValueEntry
	err := entries(ctx, r.s.State, func(e jetstream.KeyValueEntry) error {
		wf, task, ok := strings.Cut(e.Key(), ".")
		if !ok {
			return nil
		}
		age := r.since(e.Created())
		if task == subjects.Reserved {
			var ws subjects.WorkflowState
			_ = json.Unmarshal(e.Value(), &ws) // undecodable: no state, so not paused
			workflows[wf] = wfKey{e, ws.State}
			return nil
		}
		var st subjects.TaskState
		if err := json.Unmarshal(e.Value(), &st); err != nil {
			tasksLeft[wf]++
			r.add(Item{Kind: KindTask, Name: e.Key(), Why: "value does not decode; left for an operator", Age: age})
			return nil
		}
		if subjects.TerminalState(st.State) && age > r.opts.StateMaxAge {
			old = append(old, e)
			return nil
		}
		tasksLeft[wf]++
		why := "open (" + st.State + ")"
		if subjects.TerminalState(st.State) {
			why = st.State + ", within the state retention"
		}
		r.add(Item{Kind: KindTask, Name: e.Key(), Why: why, Age: age})
		r.refs(e.Value(), &st)
		return nil
	})
	if err != nil {
		return fmt.Errorf("gc: read %s: %w", r.s.State.Bucket(), err)
	}
	if err := r.cached(ctx); err != nil {
		return err
	}
	for _, e := range old {
		var st subjects.TaskState
		_ = json.Unmarshal(e.Value(), &st) // decoded above
		removed, err := r.purge(ctx, e)
		if err != nil {
			return err
		}
		wf, _, _ := strings.Cut(e.Key(), ".")
		age := r.since(e.Created())
		if !removed {
			tasksLeft[wf]++
			r.add(Item{Kind: KindTask, Name: e.Key(), Why: "written again since it was read", Age: age})
			continue
		}
		r.add(Item{Kind: KindTask, Name: e.Key(), Removed: true, Why: st.State + ", older than the state retention", Age: age})
	}
	for wf, w := range workflows {
		age := r.since(w.e.Created())
		switch {
		case tasksLeft[wf] > 0:
			r.add(Item{Kind: KindWorkflow, Name: w.e.Key(), Why: fmt.Sprintf("%d task keys left", tasksLeft[wf]), Age: age})
		case w.state == subjects.StatePaused:
			r.add(Item{Kind: KindWorkflow, Name: w.e.Key(), Why: "paused", Age: age})
		case age <= r.opts.StateMaxAge:
			r.add(Item{Kind: KindWorkflow, Name: w.e.Key(), Why: "within the state retention", Age: age})
		default:
			removed, err := r.purge(ctx, w.e)
			if err != nil {
				return err
			}
			if !removed {
				r.add(Item{Kind: KindWorkflow, Name: w.e.Key(), Why: "written again since it was read", Age: age})
				continue
			}
			r.add(Item{Kind: KindWorkflow, Name: w.e.Key(), Removed: true, Why: "no task keys left, older than the state retention", Age: age})
		}
	}
	return nil
}

// purge removes a state key at the revision read, and reports false when
// it was written since (the write wins).
func (r *run) purge(ctx context.Context, e jetstream.KeyValueEntry) (bool, error) {
	if r.opts.DryRun {
		return true, nil
	}
	err := r.s.State.Purge(ctx, e.Key(), jetstream.LastRevision(e.Revision()))
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("gc: remove %s: %w", e.Key(), err)
	}
	return true, nil
}

// refs notes the blobs a kept state value refers to: in its JSON (result,
// request) and in its outbox events' bodies.
func (r *run) refs(raw []byte, st *subjects.TaskState) {
	mark := func(name string) { r.inUse[name] = true }
	blobs.Refs(raw, mark)
	for _, it := range st.Outbox {
		if it.Event != nil {
			blobs.Refs(it.Event.Body, mark)
		}
	}
}

// cached notes the blobs of every live cached result: those the outputs of
// kept state name, and the others, as a later task may be served from
// them. The cache bucket's TTL bounds how many there are.
func (r *run) cached(ctx context.Context) error {
	if r.s.Cache == nil {
		return nil
	}
	err := entries(ctx, r.s.Cache, func(e jetstream.KeyValueEntry) error {
		blobs.Refs(e.Value(), func(name string) { r.inUse[name] = true })
		return nil
	})
	if err != nil {
		return fmt.Errorf("gc: read %s: %w", r.s.Cache.Bucket(), err)
	}
	return nil
}

// since is how long ago t was, never negative.
func (r *run) since(t time.Time) time.Duration { return max(0, r.now.Sub(t)) }
