package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/schollz/progressbar/v3"

	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// finished is the JSON line printed for each finished task.
type finished struct {
	Workflow   string          `json:"workflow"`
	Task       string          `json:"task"`
	Outcome    string          `json:"outcome"`
	Reason     string          `json:"reason,omitempty"`
	Error      string          `json:"error,omitempty"`
	Attempt    int             `json:"attempt"`
	DurationMS int64           `json:"duration_ms"`
	EventID    string          `json:"event_id,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
}

func outcomeOf(et subjects.EventType) string {
	return strings.TrimPrefix(string(et), "task_")
}

// waitAll follows the submitted tasks to their terminal events and prints
// one line per task; it fails if any task did not complete.
func waitAll(ctx context.Context, g *globals, c *client, subs []producer.Submitted, after uint64) error {
	type key struct{ wf, task string }
	pending := map[key]producer.Submitted{}
	byWorkflow := map[string]bool{}
	for _, s := range subs {
		pending[key{s.Workflow, s.Task}] = s
		byWorkflow[s.Workflow] = true
	}
	var bar *progressbar.ProgressBar
	if isTerminal(g.stderr) {
		bar = progressbar.NewOptions(len(subs), progressbar.OptionSetWriter(g.stderr),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("tasks"),
			progressbar.OptionSetDescription("running"), progressbar.OptionClearOnFinish())
	}
	var (
		mu     sync.Mutex
		failed int
		enc    = json.NewEncoder(g.stdout)
	)
	done := func(fin finished) {
		mu.Lock()
		defer mu.Unlock()
		k := key{fin.Workflow, fin.Task}
		if _, ok := pending[k]; !ok {
			return
		}
		delete(pending, k)
		if fin.Outcome != "completed" {
			failed++
		}
		if bar != nil {
			bar.Describe(fmt.Sprintf("running (%d failed)", failed))
			_ = bar.Add(1)
		}
		_ = enc.Encode(fin)
	}
	// A duplicate submission may have finished before we started following.
	if kv, err := c.js.KeyValue(ctx, g.names.StateBucket()); err == nil {
		st := state.New(kv)
		for _, s := range subs {
			if !s.Duplicate {
				continue
			}
			if t, err := st.GetTask(ctx, s.Workflow, s.Task); err == nil && subjects.TerminalState(t.State) {
				done(finished{Workflow: s.Workflow, Task: s.Task, Outcome: t.State, Reason: string(t.Reason), Attempt: t.Attempt,
					DurationMS: t.UpdatedAt.Sub(t.StartedAt).Milliseconds(), Output: t.Result})
			}
		}
	}
	remaining := func() int { mu.Lock(); defer mu.Unlock(); return len(pending) }
	lookup := func(k key) producer.Submitted { mu.Lock(); defer mu.Unlock(); return pending[k] }
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(byWorkflow))
	for wf := range byWorkflow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := producer.FollowTerminal(ctx, c.js, g.names, wf, after, func(tm producer.Terminal) bool {
				ev := tm.Event
				if ev.EventType == subjects.EventTaskRejected && !ownRejection(ev, lookup(key{ev.WorkflowID, ev.TaskID})) {
					return true
				}
				done(finished{Workflow: ev.WorkflowID, Task: ev.TaskID, Outcome: outcomeOf(ev.EventType), Reason: reasonOf(ev),
					Error: ev.Error, Attempt: ev.Attempt, DurationMS: ev.DurationMS, EventID: ev.EventID, Output: ev.Output})
				if remaining() == 0 {
					cancel()
					return false
				}
				return true
			})
			if err != nil && !errors.Is(err, context.Canceled) {
				errs <- err
				cancel()
			}
		}()
	}
	if remaining() == 0 {
		cancel()
	}
	wg.Wait()
	close(errs)
	if bar != nil {
		_ = bar.Finish()
	}
	if err := <-errs; err != nil {
		return err
	}
	if n := remaining(); n > 0 {
		return fmt.Errorf("stopped waiting with %d task(s) unfinished (they keep running; see drover audit)", n)
	}
	if failed > 0 {
		fmt.Fprintf(g.stderr, "%d of %d task(s) did not complete (failed, rejected or cancelled)\n", failed, len(subs))
		return exitCode(1)
	}
	return nil
}

// ownRejection tells whether a task_rejected event is about this request:
// its event ID ends with the request's stream sequence.
func ownRejection(ev subjects.AuditEvent, s producer.Submitted) bool {
	i := strings.LastIndexByte(ev.EventID, '/')
	return i >= 0 && ev.EventID[i+1:] == strconv.FormatUint(s.Seq, 10)
}

func reasonOf(ev subjects.AuditEvent) string {
	if ev.EventType == subjects.EventTaskCompleted {
		return ""
	}
	return ev.Action
}
