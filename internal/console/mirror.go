package console

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// The board's columns, in order.
const (
	ColQueued       = "queued"
	ColPlanning     = "planning"
	ColImplementing = "implementing"
	ColJudging      = "judging"
	ColReview       = "review"
	ColDone         = "done"
	ColFailed       = "failed"
)

// Columns are the board's columns in display order.
var Columns = []string{ColQueued, ColPlanning, ColImplementing, ColJudging, ColReview, ColDone, ColFailed}

// columnTitles are the columns' headings.
var columnTitles = map[string]string{
	ColQueued: "Queued", ColPlanning: "Planning", ColImplementing: "Implementing", ColJudging: "Judging",
	ColReview: "Awaiting review", ColDone: "Done", ColFailed: "Failed",
}

// Column is the board column of a task in state with stage: terminal states
// by outcome, open ones by the next role to run. A task no worker has
// started yet (no worker) is queued; a stage this console does not know
// (a review gate's) is awaiting review.
func Column(state, stage, worker string) string {
	switch state {
	case subjects.StateCompleted:
		return ColDone
	case subjects.StateFailed, subjects.StateCancelled:
		return ColFailed
	}
	if worker == "" {
		return ColQueued
	}
	switch stage {
	case "", string(subjects.RolePlanner):
		return ColPlanning
	case string(subjects.RoleImplementer):
		return ColImplementing
	case string(subjects.RoleJudge):
		return ColJudging
	case subjects.StageDone:
		return ColDone
	}
	return ColReview
}

// maxMirrorTasks bounds the tasks the mirror keeps; past it, new tasks are
// counted but not kept.
const maxMirrorTasks = 1_000_000

// Task is one task as the mirror keeps it.
type Task struct {
	Workflow, ID   string
	State, Stage   string
	Worker, Reason string
	Attempt        int
	Started        time.Time
	Updated        time.Time
	Col            string
	// Title is the first line of the task's scope and Agent the agent that
	// implements it, as the audit stream tells (cards.go); "" until known.
	Title, Agent string
	agentSeq     uint64
	// Rev is the mirror's change count when the task last changed.
	Rev uint64
}

// Took is how long the task ran so far (to its last update).
func (t *Task) Took() time.Duration {
	if t.Started.IsZero() || t.Updated.Before(t.Started) {
		return 0
	}
	return t.Updated.Sub(t.Started)
}

// Workflow is one workflow as the mirror keeps it.
type Workflow struct {
	ID       string
	State    string
	Reason   string
	Tasks    map[string]*Task
	Cols     map[string]int
	States   map[string]int
	Started  time.Time
	Updated  time.Time
	TaskTime time.Duration // sum of the finished tasks' durations
	Total    int
	// Rev is the mirror's change count when the workflow or one of its
	// tasks last changed.
	Rev uint64
}

// Duration is the workflow's wall clock from its first start to its last
// update.
func (w *Workflow) Duration() time.Duration {
	if w.Started.IsZero() || w.Updated.Before(w.Started) {
		return 0
	}
	return w.Updated.Sub(w.Started)
}

// Speedup is the finished tasks' time over the wall clock: how many tasks
// ran at once on average.
func (w *Workflow) Speedup() float64 {
	if d := w.Duration(); d > 0 {
		return float64(w.TaskTime) / float64(d)
	}
	return 0
}

// Open counts the tasks not in a terminal state.
func (w *Workflow) Open() int {
	return w.Total - w.States[subjects.StateCompleted] - w.States[subjects.StateFailed] - w.States[subjects.StateCancelled]
}

// mirror keeps the state bucket in memory, fed by one KV watch, so that a
// page of a 10,000-task workflow renders without reading the bucket.
type mirror struct {
	mu  sync.RWMutex
	wfs map[string]*Workflow
	// pending keeps the card notes of tasks not in the mirror yet.
	pending map[string]note
	count   int
	seq     uint64 // changes applied so far
	ready   chan struct{}
	once    sync.Once
}

func newMirror() *mirror {
	return &mirror{wfs: map[string]*Workflow{}, pending: map[string]note{}, ready: make(chan struct{})}
}

func (m *mirror) wf(id string) *Workflow {
	w := m.wfs[id]
	if w == nil {
		w = &Workflow{ID: id, State: subjects.StateRunning, Tasks: map[string]*Task{}, Cols: map[string]int{}, States: map[string]int{}}
		m.wfs[id] = w
	}
	return w
}

// apply records one entry of the bucket and returns the change to push:
// nil for nothing.
func (m *mirror) apply(key string, value []byte, deleted bool) map[string]any {
	wfTok, taskTok, ok := strings.Cut(key, ".")
	if !ok {
		return nil
	}
	wfID, err1 := subjects.ParseToken(wfTok)
	taskID, err2 := subjects.ParseToken(taskTok)
	if err1 != nil || err2 != nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	w := m.wf(wfID)
	w.Rev = m.seq
	if taskID == subjects.Reserved {
		var ws subjects.WorkflowState
		if deleted || json.Unmarshal(value, &ws) != nil || ws.State == "" {
			ws.State = subjects.StateRunning
		}
		w.State, w.Reason = ws.State, ws.Reason
		return w.item()
	}
	old := w.Tasks[taskID]
	if old != nil {
		w.Cols[old.Col]--
		w.States[old.State]--
		if subjects.TerminalState(old.State) {
			w.TaskTime -= old.Took()
		}
	}
	if deleted {
		if old != nil {
			delete(w.Tasks, taskID)
			w.Total--
			m.count--
		}
		return map[string]any{"k": "t", "w": wfID, "t": taskID, "col": "", "c": copyCounts(w.Cols), "n": w.Total, "o": w.Open()}
	}
	var ts subjects.TaskState
	if json.Unmarshal(value, &ts) != nil {
		return nil
	}
	t := old
	if t == nil {
		if m.count >= maxMirrorTasks {
			return nil
		}
		t = &Task{Workflow: wfID, ID: taskID}
		m.takePending(t)
		w.Tasks[taskID] = t
		w.Total++
		m.count++
	}
	t.State, t.Stage, t.Worker, t.Reason, t.Attempt = ts.State, ts.Stage, ts.Worker, string(ts.Reason), ts.Attempt
	t.Rev = m.seq
	t.Started, t.Updated = ts.StartedAt, ts.UpdatedAt
	t.Col = Column(ts.State, ts.Stage, ts.Worker)
	w.Cols[t.Col]++
	w.States[t.State]++
	if subjects.TerminalState(t.State) {
		w.TaskTime += t.Took()
	}
	if !t.Started.IsZero() && (w.Started.IsZero() || t.Started.Before(w.Started)) {
		w.Started = t.Started
	}
	if t.Updated.After(w.Updated) {
		w.Updated = t.Updated
	}
	return t.item(w)
}

// item is the pushed form of a workflow's change.
func (w *Workflow) item() map[string]any {
	return map[string]any{"k": "w", "w": w.ID, "s": w.State, "d": displayState(w.State, w.Total, w.Open()),
		"c": copyCounts(w.Cols), "n": w.Total, "o": w.Open()}
}

// item is the pushed form of a task's change.
func (t *Task) item(w *Workflow) map[string]any {
	return map[string]any{"k": "t", "w": w.ID, "t": t.ID, "col": t.Col, "s": t.State, "g": t.Stage, "a": t.Attempt,
		"c": copyCounts(w.Cols), "n": w.Total, "o": w.Open(), "ws": w.State, "d": displayState(w.State, w.Total, w.Open()),
		"ti": t.Title, "ag": t.Agent, "el": fmtDuration(t.Elapsed(time.Now())), "rn": t.Running(time.Now())}
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, n := range m {
		out[k] = n
	}
	return out
}

// rev is the mirror's change count: a page rendered at rev r misses no
// change when its event stream asks for the changes since r.
func (m *mirror) rev() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.seq
}

// since returns the pushed form of the changes after rev: of workflow wf's
// tasks and the workflow itself, or with wf "", of every workflow. ok is
// false when there are more than limit, and the page must reload instead.
func (m *mirror) since(wf string, rev uint64, limit int) (items []map[string]any, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if rev >= m.seq {
		return nil, true
	}
	if wf == "" {
		for _, w := range m.wfs {
			if w.Rev > rev {
				if len(items) == limit {
					return nil, false
				}
				items = append(items, w.item())
			}
		}
		return items, true
	}
	w := m.wfs[wf]
	if w == nil || w.Rev <= rev {
		return nil, true
	}
	items = append(items, w.item())
	for _, t := range w.Tasks {
		if t.Rev > rev {
			if len(items) == limit {
				return nil, false
			}
			items = append(items, t.item(w))
		}
	}
	return items, true
}

// watch feeds the mirror from the bucket until ctx ends; each change after
// the initial values goes to push.
func (m *mirror) watch(ctx context.Context, kv jetstream.KeyValue, push func(any)) error {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	loaded := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return nil
			}
			if e == nil {
				if !loaded {
					loaded = true
					m.once.Do(func() { close(m.ready) })
				}
				continue
			}
			del := e.Operation() != jetstream.KeyValuePut
			msg := m.apply(e.Key(), e.Value(), del)
			if loaded && msg != nil {
				push(msg)
			}
		}
	}
}

// WorkflowView is a copy of a workflow's counts, safe to render.
type WorkflowView struct {
	ID, State, Reason string
	// Display is the state shown: State, or finished (displayState).
	Display          string
	Cols, States     map[string]int
	Total, Open      int
	Started, Updated time.Time
	Duration         time.Duration
	Speedup          float64
}

func (w *Workflow) view() WorkflowView {
	v := WorkflowView{ID: w.ID, State: w.State, Display: displayState(w.State, w.Total, w.Open()), Reason: w.Reason, Cols: map[string]int{}, States: map[string]int{},
		Total: w.Total, Open: w.Open(), Started: w.Started, Updated: w.Updated, Duration: w.Duration(), Speedup: w.Speedup()}
	for k, n := range w.Cols {
		v.Cols[k] = n
	}
	for k, n := range w.States {
		v.States[k] = n
	}
	return v
}

// workflows lists every workflow, sorted by ID.
func (m *mirror) workflows() []WorkflowView {
	v, _ := m.workflowsAt()
	return v
}

// workflowsAt is workflows with the change count it reflects.
func (m *mirror) workflowsAt() ([]WorkflowView, uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]WorkflowView, 0, len(m.wfs))
	for _, w := range m.wfs {
		out = append(out, w.view())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, m.seq
}

// board returns a workflow's counts and, per column, one page of its tasks
// sorted by ID: tasks [page*size, (page+1)*size) of each column.
func (m *mirror) board(id string, page, size int) (WorkflowView, map[string][]Task, bool) {
	v, cards, _, ok := m.boardAt(id, page, size)
	return v, cards, ok
}

// boardAt is board with the mirror's change count it reflects.
func (m *mirror) boardAt(id string, page, size int) (WorkflowView, map[string][]Task, uint64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w := m.wfs[id]
	if w == nil {
		return WorkflowView{}, nil, m.seq, false
	}
	by := map[string][]*Task{}
	for _, t := range w.Tasks {
		by[t.Col] = append(by[t.Col], t)
	}
	out := map[string][]Task{}
	for col, ts := range by {
		sort.Slice(ts, func(i, j int) bool { return ts[i].ID < ts[j].ID })
		lo, hi := min(page*size, len(ts)), min((page+1)*size, len(ts))
		cp := make([]Task, 0, hi-lo)
		for _, t := range ts[lo:hi] {
			cp = append(cp, *t)
		}
		out[col] = cp
	}
	return w.view(), out, m.seq, true
}
