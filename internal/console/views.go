package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/dlq"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// pageSize is how many rows (or cards per column) a page shows.
const pageSize = 200

// readTimeout bounds the NATS reads of one page.
const readTimeout = 10 * time.Second

func pageOf(r *http.Request) int {
	p, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || p < 0 || p > 1_000_000 {
		return 0
	}
	return p
}

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) error {
	rep, ferr, ok := s.fleet.snapshot()
	if !ok {
		ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
		var err error
		rep, err = s.collectFleet(ctx)
		cancel()
		s.fleet.set(rep, err)
		rep, ferr, _ = s.fleet.snapshot()
	}
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	cs, cerr := cache.NewAdmin(s.js, s.names).Stats(ctx)
	var saved uint64
	if cerr == nil && cs.Entries > 0 && rep.Cache.Hits > 0 {
		saved = uint64(rep.Cache.Hits) * (cs.Bytes / cs.Entries)
	}
	wfs := s.mirror.workflows()
	open := 0
	for _, wf := range wfs {
		open += wf.Open
	}
	return s.render(w, r, "fleet", "Fleet", "fleet", map[string]any{
		"Report": rep, "Err": ferr, "Spark": s.fleet.spark(), "CacheStats": cs, "CacheErr": cerr, "Saved": saved,
		"Workflows": len(wfs), "Open": open, "Clients": s.hub.clientCount(),
	}, nil)
}

func (s *Server) workflowsPage(w http.ResponseWriter, r *http.Request) error {
	all, rev := s.mirror.workflowsAt()
	p := pageOf(r)
	lo, hi := min(p*pageSize, len(all)), min((p+1)*pageSize, len(all))
	return s.render(w, r, "workflows", "Workflows", "workflows", map[string]any{
		"Workflows": all[lo:hi], "Total": len(all), "Page": p, "Prev": p > 0, "Next": hi < len(all),
	}, map[string]string{"rev": strconv.FormatUint(rev, 10)})
}

// boardColumn is one column of a board page.
type boardColumn struct {
	Name, Title string
	Count       int
	Cards       []Task
	More        int
}

func (s *Server) boardPage(w http.ResponseWriter, r *http.Request) error {
	wf := r.PathValue("wf")
	if err := subjects.ValidateID(wf); err != nil {
		return errStatus(http.StatusBadRequest, "workflow %q: %v", wf, err)
	}
	p := pageOf(r)
	v, cards, rev, ok := s.mirror.boardAt(wf, p, pageSize)
	if !ok {
		return errStatus(http.StatusNotFound, "workflow %s has no tasks in the state bucket", wf)
	}
	cols := make([]boardColumn, 0, len(Columns))
	next := false
	for _, c := range Columns {
		shown := len(cards[c])
		more := v.Cols[c] - p*pageSize - shown
		next = next || more > 0
		cols = append(cols, boardColumn{Name: c, Title: columnTitles[c], Count: v.Cols[c], Cards: cards[c], More: max(more, 0)})
	}
	return s.render(w, r, "board", "Workflow "+wf, "board", map[string]any{
		"WF": v, "Columns": cols, "Page": p, "Prev": p > 0, "Next": next, "PageSize": pageSize,
	}, map[string]string{"wf": wf, "cap": strconv.Itoa(pageSize), "page": strconv.Itoa(p), "rev": strconv.FormatUint(rev, 10)})
}

// timelineEntry is one audit event of a task's timeline.
type timelineEntry struct {
	Seq      uint64
	Time     time.Time
	Type     string
	Actor    string
	Attempt  int
	Action   string
	Status   string
	Error    string
	Reason   string
	Cached   bool
	Duration time.Duration
	Worker   string
	Runner   string
	Output   string
	Lessons  string
	Metadata string
	Terminal bool
	// Redrive is set for a task_redriven event: who redrove which dead
	// letter into which workflow.
	Redrive *redriveNote
}

// redriveNote is what a task_redriven event's metadata says.
type redriveNote struct {
	By          string `json:"actor"`
	DLQSeq      uint64 `json:"dlq_seq"`
	NewWorkflow string `json:"new_workflow"`
	Reason      string `json:"reason"`
}

// redriveNoteOf reads a task_redriven event's metadata; nil for another
// event, or metadata that does not say who redrove it.
func redriveNoteOf(ev *subjects.AuditEvent) *redriveNote {
	var n redriveNote
	if ev.EventType != subjects.EventTaskRedriven || json.Unmarshal(ev.Metadata, &n) != nil || n.By == "" {
		return nil
	}
	return &n
}

// maxTimeline bounds the events a task page reads.
const maxTimeline = 2000

var errEnough = errors.New("enough")

func (s *Server) taskPage(w http.ResponseWriter, r *http.Request) error {
	wf, id := r.PathValue("wf"), r.PathValue("task")
	if err := errors.Join(subjects.ValidateID(wf), subjects.ValidateID(id)); err != nil {
		return errStatus(http.StatusBadRequest, "task %q/%q: %v", wf, id, err)
	}
	rev := s.mirror.rev() // before the reads: a change after them is sent again
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	st, err := state.New(s.stateKV()).GetTask(ctx, wf, id)
	hasState := err == nil
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return err
	}
	var (
		timeline []timelineEntry
		diff     string
		diffFrom string
		attempts = map[int]bool{}
		req      subjects.TaskRequest
		lastSeq  uint64
	)
	err = audit.Replay(ctx, s.js, s.names, audit.Query{Workflow: wf, Task: id}, func(rec audit.Record) error {
		ev := rec.Event
		e := timelineEntry{Seq: rec.Seq, Time: ev.Timestamp, Type: string(ev.EventType), Actor: string(ev.Actor), Attempt: ev.Attempt,
			Action: ev.Action, Status: ev.Status, Error: ev.Error, Reason: ev.Reasoning, Cached: ev.Cached,
			Duration: time.Duration(ev.DurationMS) * time.Millisecond, Worker: ev.Worker, Output: prettyJSON(ev.Output), Metadata: prettyJSON(ev.Metadata),
			Terminal: ev.EventType == subjects.EventTaskCompleted || ev.EventType == subjects.EventTaskFailed || ev.EventType == subjects.EventTaskCancelled}
		if rec.Err != nil {
			e.Error = rec.Err.Error()
		}
		e.Redrive = redriveNoteOf(&ev)
		var md map[string]json.RawMessage
		if json.Unmarshal(ev.Metadata, &md) == nil {
			var runner, model string
			if json.Unmarshal(md["runner"], &runner) == nil {
				e.Runner = runner
			} else if json.Unmarshal(md["model"], &model) == nil {
				e.Runner = "model " + model // an openai runner's
			}
		}
		var in map[string]json.RawMessage
		if json.Unmarshal(ev.Input, &in) == nil && len(in["lessons"]) > 0 && string(in["lessons"]) != "null" {
			e.Lessons = prettyJSON(in["lessons"])
		}
		if ev.EventType == subjects.EventTaskAccepted && req.ID == "" {
			_ = json.Unmarshal(ev.Input, &req)
		}
		if ev.EventType == subjects.EventImplementerChange {
			if d := findDiff(ev.Output); d != "" {
				diff, diffFrom = d, "output"
			} else if d := findDiff(ev.Metadata); d != "" {
				diff, diffFrom = d, "metadata"
			}
		}
		attempts[ev.Attempt] = true
		lastSeq = rec.Seq
		timeline = append(timeline, e)
		if len(timeline) >= maxTimeline {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	if !hasState && len(timeline) == 0 {
		return errStatus(http.StatusNotFound, "task %s/%s has no state and no audit events", wf, id)
	}
	var entries []dlq.View
	_ = dlq.List(ctx, s.js, s.names, dlq.Filter{Workflow: wf}, func(e dlq.Entry) error {
		if e.Task == id && len(entries) < 20 {
			entries = append(entries, dlq.ViewOf(e, false))
		}
		return nil
	})
	live, liveSeq, err := s.liveLines(ctx, wf, id)
	if err != nil {
		s.log.Warn("console: live activity not read", "workflow", wf, "task", id, "err", err)
	}
	lines, truncated := Highlight(diff)
	data := map[string]any{"WF": wf, "ID": id, "HasState": hasState, "State": st, "Timeline": timeline,
		"Attempts": len(attempts), "DLQ": entries, "Diff": lines, "DiffTruncated": truncated, "DiffFrom": diffFrom,
		"Col": Column(st.State, st.Stage, st.Worker), "Result": prettyJSON(st.Result), "Req": req, "Live": live}
	return s.render(w, r, "task", "Task "+id, "task", data, map[string]string{"wf": wf, "task": id, "rev": strconv.FormatUint(rev, 10),
		"after": strconv.FormatUint(lastSeq, 10), "liveseq": strconv.FormatUint(liveSeq, 10), "livecap": strconv.Itoa(maxLiveRows)})
}

// eventName matches an actor or event type given as a filter.
var eventName = regexp.MustCompile(`^[a-z][a-z_]{0,39}$`)

// parseWhen reads an RFC 3339 time or a duration ago ("15m").
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Parse(time.RFC3339, s)
}

// maxAuditRows bounds the rows the audit page renders (the newest ones).
const maxAuditRows = 200

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := map[string]string{}
	for _, k := range []string{"workflow", "task", "actor", "type", "since", "until"} {
		f[k] = strings.TrimSpace(q.Get(k))
	}
	for _, k := range []string{"workflow", "task"} {
		if v := f[k]; v != "" && v != subjects.Reserved {
			if err := subjects.ValidateID(v); err != nil {
				return errStatus(http.StatusBadRequest, "%s %q: %v", k, v, err)
			}
		}
	}
	for _, k := range []string{"actor", "type"} {
		if v := f[k]; v != "" && !eventName.MatchString(v) {
			return errStatus(http.StatusBadRequest, "%s %q: want a name such as judge or task_failed", k, v)
		}
	}
	now := time.Now()
	if f["since"] == "" && f["workflow"] == "" && f["task"] == "" {
		f["since"] = "1h"
	}
	since, err := parseWhen(f["since"], now)
	if err != nil {
		return errStatus(http.StatusBadRequest, "since %q: want an RFC 3339 time or a duration such as 15m", f["since"])
	}
	until, err := parseWhen(f["until"], now)
	if err != nil {
		return errStatus(http.StatusBadRequest, "until %q: want an RFC 3339 time or a duration such as 15m", f["until"])
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	ring := make([]eventRow, 0, maxAuditRows)
	n := 0
	err = audit.Replay(ctx, s.js, s.names, audit.Query{Workflow: f["workflow"], Task: f["task"], Actor: subjects.Actor(f["actor"]),
		Type: subjects.EventType(f["type"]), Since: since, Until: until}, func(rec audit.Record) error {
		row := rowOf(rec)
		if len(ring) < maxAuditRows {
			ring = append(ring, row)
		} else {
			ring[n%maxAuditRows] = row
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	rows := make([]eventRow, 0, len(ring))
	for i := range ring { // newest first
		rows = append(rows, ring[(n-1-i+len(ring)*2)%len(ring)])
	}
	var after uint64
	for _, row := range rows {
		after = max(after, row.Seq)
	}
	live := map[string]string{"cap": "500", "after": strconv.FormatUint(after, 10)}
	for _, k := range []string{"workflow", "task", "actor", "type"} {
		live["f"+k] = f[k] // alphanumeric: html/template refuses other attribute names
	}
	if f["until"] != "" {
		live["nolive"] = "1"
	}
	return s.render(w, r, "audit", "Audit", "audit", map[string]any{"Rows": rows, "Matched": n, "F": f, "Actors": actors, "Types": eventTypes}, live)
}

// The filter choices of the audit page.
var (
	actors     = []string{"system", "planner", "implementer", "judge", "human"}
	eventTypes = []string{"task_accepted", "planner_decision", "implementer_change", "judge_verdict", "task_retried", "task_completed",
		"task_failed", "task_cancelled", "task_rejected", "workflow_paused", "workflow_resumed", "workflow_cancelled", "task_redriven"}
)

// eventRow is one audit event in the audit table, and as pushed.
type eventRow struct {
	Seq      uint64
	Time     time.Time
	Workflow string
	Task     string
	Actor    string
	Type     subjects.EventType
	Status   string
	Text     string
}

// rowOf reads a record's event into a row with bounded text.
func rowOf(rec audit.Record) eventRow {
	ev := rec.Event
	if ev.EventID == "" && rec.Err == nil && json.Unmarshal(rec.Data, &ev) != nil {
		return eventRow{Seq: rec.Seq, Time: rec.Time, Text: "(an event that does not decode)"}
	}
	text := ev.Error
	if text == "" {
		text = ev.Action
	}
	if len(text) > maxEventText {
		text = text[:maxEventText] + "…"
	}
	return eventRow{Seq: rec.Seq, Time: rec.Time, Workflow: ev.WorkflowID, Task: ev.TaskID, Actor: string(ev.Actor), Type: ev.EventType,
		Status: ev.Status, Text: strings.ToValidUTF8(text, "�")}
}

// item is the pushed form of the row.
func (e eventRow) item() map[string]any {
	return map[string]any{"k": "a", "q": e.Seq, "ts": e.Time.UTC().Format("15:04:05.000"), "w": e.Workflow, "t": e.Task,
		"ac": e.Actor, "e": e.Type, "st": e.Status, "x": e.Text}
}

func (s *Server) dlqPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := dlq.Filter{Workflow: q.Get("workflow"), Reason: q.Get("reason"), Queue: q.Get("queue")}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	ring := make([]dlq.View, 0, pageSize)
	n := 0
	err := dlq.List(ctx, s.js, s.names, f, func(e dlq.Entry) error {
		v := dlq.ViewOf(e, false)
		if len(ring) < pageSize {
			ring = append(ring, v)
		} else {
			ring[n%pageSize] = v
		}
		n++
		return nil
	})
	if err != nil {
		return errStatus(http.StatusBadRequest, "%v", err)
	}
	rows := make([]dlq.View, 0, len(ring))
	for i := range ring {
		rows = append(rows, ring[(n-1-i+len(ring)*2)%len(ring)])
	}
	return s.render(w, r, "dlq", "Dead letters", "dlq", map[string]any{"Rows": rows, "Total": n, "F": f}, nil)
}

func (s *Server) entry(r *http.Request) (dlq.Entry, error) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 {
		return dlq.Entry{}, errStatus(http.StatusBadRequest, "dlq entry %q: want a sequence number", r.PathValue("seq"))
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	e, err := dlq.Get(ctx, s.js, s.names, seq)
	if errors.Is(err, dlq.ErrNotFound) {
		return e, errStatus(http.StatusNotFound, "no dlq entry %d", seq)
	}
	return e, err
}

func (s *Server) dlqEntryPage(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entry(r)
	if err != nil {
		return err
	}
	v := dlq.ViewOf(e, true)
	body := prettyJSON(v.Body)
	if len(v.BodyBase64) > 0 {
		body = "(binary, " + strconv.Itoa(len(v.BodyBase64)) + " bytes)"
	}
	red := dlq.Redrivable(e.Reason)
	return s.render(w, r, "dlq_entry", "Dead letter "+strconv.FormatUint(e.Seq, 10), "dlq", map[string]any{
		"E": v, "Body": body, "Redrivable": red == nil, "NotRedrivable": red,
	}, nil)
}
