package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/droverhq/drover/internal/table"
	"github.com/droverhq/drover/subjects"
)

// Outcome is where a task stands according to its audit events.
type Outcome string

// The outcomes of a task.
const (
	OutcomeRunning   Outcome = "running"
	OutcomeCompleted Outcome = "completed"
	OutcomeFailed    Outcome = "failed"
	OutcomeCancelled Outcome = "cancelled"
	OutcomeRejected  Outcome = "rejected"
)

// CacheUse tells how much of a role's work came from the cache.
type CacheUse string

// The cache uses of a role. CacheAbsent means the role left no event.
const (
	CacheAbsent  CacheUse = ""
	CacheRun     CacheUse = "run"     // no event of the role was cached
	CachePartial CacheUse = "partial" // some were
	CacheHit     CacheUse = "cached"  // all were
)

// RoleCache is the cache use of each role of a task.
type RoleCache struct {
	Planner, Implementer, Judge CacheUse
}

// TaskSummary sums up one task of a workflow.
type TaskSummary struct {
	Workflow, Task string
	Outcome        Outcome
	// Reason is the action of a task_failed or task_rejected event (the DLQ
	// reason); empty otherwise.
	Reason string
	// Attempts is the highest attempt of the task's events.
	Attempts int
	// Events counts the task's events.
	Events int
	// First is the timestamp of the task's first event, End that of its
	// terminal event (zero while running).
	First, End time.Time
	// Duration is End - First; for a running task, the time from its first
	// to its latest event so far.
	Duration time.Duration
	Cache    RoleCache
}

// WorkflowSummary sums up the tasks of one or more workflows.
type WorkflowSummary struct {
	// Tasks are sorted by first-event time, then workflow, then task ID.
	Tasks []TaskSummary
	// Start is the earliest task event, End the latest terminal event.
	Start, End time.Time
	// WallClock is End - Start, 0 when no task has finished.
	WallClock time.Duration
	// TaskTime is the sum of the durations of the finished tasks.
	TaskTime time.Duration
	// Speedup is TaskTime / WallClock: how many tasks ran at once on
	// average; 0 when WallClock is 0.
	Speedup float64
}

// taskKey identifies a task across workflows.
type taskKey struct{ workflow, task string }

// taskAcc accumulates the events of one task.
type taskAcc struct {
	sum          TaskSummary
	last         time.Time
	terminal     subjects.EventType
	roleEvents   [3]int
	roleCachedOf [3]int
}

// Summarize sums up events, which may come in any order and from several
// workflows. Workflow-level events (task "" or "_") are not tasks and are left
// out, as are task_redriven events (a decision about a request that ended). A task's outcome comes from its first task_completed, task_failed or
// task_cancelled; a task_rejected decides it only when there is none of
// those (a duplicate submission of a finished task is rejected without
// changing its outcome). Role cache use counts the role's own success events
// (planner_decision, implementer_change, judge_verdict).
func Summarize(events []subjects.AuditEvent) WorkflowSummary {
	accs := map[taskKey]*taskAcc{}
	for i := range events {
		e := &events[i]
		if e.TaskID == "" || e.TaskID == subjects.Reserved || e.EventType == subjects.EventTaskRedriven {
			continue // a workflow's own event, or a redrive: no step of a task
		}
		k := taskKey{e.WorkflowID, e.TaskID}
		a := accs[k]
		if a == nil {
			a = &taskAcc{sum: TaskSummary{Workflow: e.WorkflowID, Task: e.TaskID, First: e.Timestamp}, last: e.Timestamp}
			accs[k] = a
		}
		a.add(e)
	}
	var s WorkflowSummary
	for _, a := range accs {
		t := a.finish()
		s.Tasks = append(s.Tasks, t)
		if s.Start.IsZero() || t.First.Before(s.Start) {
			s.Start = t.First
		}
		if t.Outcome != OutcomeRunning {
			s.TaskTime += t.Duration
			if t.End.After(s.End) {
				s.End = t.End
			}
		}
	}
	sort.Slice(s.Tasks, func(i, j int) bool {
		a, b := s.Tasks[i], s.Tasks[j]
		if !a.First.Equal(b.First) {
			return a.First.Before(b.First)
		}
		if a.Workflow != b.Workflow {
			return a.Workflow < b.Workflow
		}
		return a.Task < b.Task
	})
	if !s.End.IsZero() && s.End.After(s.Start) {
		s.WallClock = s.End.Sub(s.Start)
		s.Speedup = float64(s.TaskTime) / float64(s.WallClock)
	}
	return s
}

// add takes one event of the task into account.
func (a *taskAcc) add(e *subjects.AuditEvent) {
	a.sum.Events++
	if e.Attempt > a.sum.Attempts {
		a.sum.Attempts = e.Attempt
	}
	if e.Timestamp.Before(a.sum.First) {
		a.sum.First = e.Timestamp
	}
	if e.Timestamp.After(a.last) {
		a.last = e.Timestamp
	}
	for i, r := range subjects.Roles {
		if e.EventType == subjects.RoleEvent(r) {
			a.roleEvents[i]++
			if e.Cached {
				a.roleCachedOf[i]++
			}
		}
	}
	if !e.EventType.Terminal() || !a.decidedBy(e) {
		return
	}
	a.terminal = e.EventType
	a.sum.End = e.Timestamp
	a.sum.Reason = ""
	if e.EventType == subjects.EventTaskFailed || e.EventType == subjects.EventTaskRejected {
		a.sum.Reason = e.Action
	}
}

// decidedBy reports whether terminal event e decides the outcome in place of
// the one seen so far: the earliest task_completed, task_failed or
// task_cancelled wins, and a task_rejected only while there is none of them.
func (a *taskAcc) decidedBy(e *subjects.AuditEvent) bool {
	rejected := e.EventType == subjects.EventTaskRejected
	switch a.terminal {
	case "":
		return true
	case subjects.EventTaskRejected:
		return !rejected || e.Timestamp.Before(a.sum.End)
	}
	return !rejected && e.Timestamp.Before(a.sum.End)
}

// finish derives the outcome, duration and cache use.
func (a *taskAcc) finish() TaskSummary {
	t := a.sum
	switch a.terminal {
	case subjects.EventTaskCompleted:
		t.Outcome = OutcomeCompleted
	case subjects.EventTaskFailed:
		t.Outcome = OutcomeFailed
	case subjects.EventTaskCancelled:
		t.Outcome = OutcomeCancelled
	case subjects.EventTaskRejected:
		t.Outcome = OutcomeRejected
	default:
		t.Outcome = OutcomeRunning
	}
	if t.Outcome == OutcomeRunning {
		t.Duration = a.last.Sub(t.First)
	} else {
		t.Duration = t.End.Sub(t.First)
	}
	use := func(i int) CacheUse {
		switch {
		case a.roleEvents[i] == 0:
			return CacheAbsent
		case a.roleCachedOf[i] == a.roleEvents[i]:
			return CacheHit
		case a.roleCachedOf[i] > 0:
			return CachePartial
		}
		return CacheRun
	}
	t.Cache = RoleCache{Planner: use(0), Implementer: use(1), Judge: use(2)}
	return t
}

// WriteTable prints one aligned row per task and a totals footer, e.g.
// "wall-clock 12.3s  sum of task time 98.1s  speedup 7.97x".
func (s WorkflowSummary) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKFLOW\tTASK\tOUTCOME\tATTEMPTS\tDURATION\tPLANNER\tIMPLEMENTER\tJUDGE")
	counts := map[Outcome]int{}
	for _, t := range s.Tasks {
		counts[t.Outcome]++
		outcome := string(t.Outcome)
		if t.Reason != "" {
			outcome += " (" + t.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", t.Workflow, t.Task, outcome, t.Attempts,
			seconds(t.Duration), table.Dash(string(t.Cache.Planner)), table.Dash(string(t.Cache.Implementer)), table.Dash(string(t.Cache.Judge)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tally := strconv.Itoa(len(s.Tasks)) + " tasks"
	for _, o := range []Outcome{OutcomeCompleted, OutcomeFailed, OutcomeCancelled, OutcomeRejected, OutcomeRunning} {
		if counts[o] > 0 {
			tally += fmt.Sprintf(", %d %s", counts[o], o)
		}
	}
	_, err := fmt.Fprintf(w, "%s\nwall-clock %s  sum of task time %s  speedup %.2fx\n",
		tally, seconds(s.WallClock), seconds(s.TaskTime), s.Speedup)
	return err
}

// seconds renders d as seconds with one decimal, e.g. "12.3s".
func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// WriteJSONLine writes r's body as one line of JSON (the stored body,
// compacted, so fields this version does not know are kept), for JSONL tools.
func WriteJSONLine(w io.Writer, r Record) error {
	var buf bytes.Buffer
	if len(r.Data) > 0 {
		if err := json.Compact(&buf, r.Data); err != nil {
			return fmt.Errorf("audit: event %d on %s is not JSON: %w", r.Seq, r.Subject, err)
		}
	} else {
		b, err := json.Marshal(r.Event)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}
