package console

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/subjects"
)

// StateFinished is how the console shows a running workflow whose tasks
// have all ended: nothing is left to run, though a new task may still be
// submitted to it. It is the console's word, not a state of the bucket.
const StateFinished = "finished"

// displayState is the state the console shows of a workflow in state
// with total tasks, open of them not terminal: a running workflow with
// tasks and none open is finished; every other keeps its state (a paused
// or cancelled workflow says so, whatever its tasks did).
func displayState(state string, total, open int) string {
	if (state == subjects.StateRunning || state == "") && total > 0 && open <= 0 {
		return StateFinished
	}
	if state == "" {
		return subjects.StateRunning
	}
	return state
}

// maxTitle bounds a card's title, in bytes.
const maxTitle = 120

// maxAgent bounds a card's agent name, in bytes.
const maxAgent = 60

// titleOf is a card's title: the first line of scope that has text,
// without control characters, cut to maxTitle bytes.
func titleOf(scope string) string {
	for line := range strings.Lines(scope) {
		if t := strings.TrimSpace(line); t != "" {
			return clip(t, maxTitle)
		}
	}
	return ""
}

// clip removes control characters from s, makes it valid UTF-8 and cuts it
// to n bytes (on a rune boundary), marking a cut with "…".
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// agentOf names the agent of a role event from its metadata: an agent
// preset's "agent", else an exec runner's "runner", else an openai
// runner's "model"; "" when the record does not say.
func agentOf(md json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(md, &m) != nil {
		return ""
	}
	for _, k := range []string{"agent", "runner", "model"} {
		var v string
		if json.Unmarshal(m[k], &v) == nil && strings.TrimSpace(v) != "" {
			if k == "model" {
				v = "model " + v
			}
			return clip(strings.TrimSpace(v), maxAgent)
		}
	}
	return ""
}

// note is what the audit stream tells of a task for its card.
type note struct {
	title, agent string
	seq          uint64 // the event's, so an older one does not overwrite
}

// noteOf reads an audit event for its card: a task_accepted event's scope
// and an implementer event's agent. ok is false for another event.
func noteOf(seq uint64, ev *subjects.AuditEvent) (note, bool) {
	switch ev.EventType {
	case subjects.EventTaskAccepted:
		var req struct {
			Scope string `json:"scope"`
		}
		if json.Unmarshal(ev.Input, &req) != nil || req.Scope == "" {
			return note{}, false
		}
		return note{title: titleOf(req.Scope), seq: seq}, true
	case subjects.EventImplementerChange:
		if a := agentOf(ev.Metadata); a != "" {
			return note{agent: a, seq: seq}, true
		}
	}
	return note{}, false
}

// noted tells whether an audit subject is one noteOf reads, so the
// follower decodes no other event twice.
func noted(subject string) bool {
	return strings.HasSuffix(subject, "."+string(subjects.EventTaskAccepted)) ||
		strings.HasSuffix(subject, "."+string(subjects.EventImplementerChange))
}

// noteEvent records what an audit event tells of its task's card, and
// pushes the card's change.
func (s *Server) noteEvent(seq uint64, subject string, data []byte) {
	if !noted(subject) {
		return
	}
	var ev subjects.AuditEvent
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	if n, ok := noteOf(seq, &ev); ok {
		if item := s.mirror.note(ev.WorkflowID, ev.TaskID, n); item != nil {
			s.hub.push(item)
		}
	}
}

// loadNotes reads the cards' titles and agents of the tasks started
// before the console: the task_accepted and implementer_change events the
// audit stream holds (a subject filter each, so the cost follows those
// events, not the stream).
func (s *Server) loadNotes(ctx context.Context) {
	select { // the tasks in the bucket first, so their notes do not wait
	case <-s.mirror.ready:
	case <-ctx.Done():
		return
	}
	for _, et := range []subjects.EventType{subjects.EventTaskAccepted, subjects.EventImplementerChange} {
		err := audit.Replay(ctx, s.js, s.names, audit.Query{Type: et}, func(rec audit.Record) error {
			if rec.Err == nil {
				if n, ok := noteOf(rec.Seq, &rec.Event); ok {
					s.mirror.note(rec.Event.WorkflowID, rec.Event.TaskID, n)
				}
			}
			return ctx.Err()
		})
		if err != nil && ctx.Err() == nil {
			s.log.Warn("console: reading the cards' titles", "type", et, "err", err)
		}
	}
}

// maxPendingNotes bounds the notes kept of tasks the mirror does not hold
// (yet): an event read before the task's state arrived.
const maxPendingNotes = 10_000

// note records n for a task and returns the card's change to push, nil
// when the task is not in the mirror (the note waits for it) or nothing
// changed.
func (m *mirror) note(wfID, taskID string, n note) map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.wfs[wfID]
	var t *Task
	if w != nil {
		t = w.Tasks[taskID]
	}
	if t == nil {
		key := wfID + "\x00" + taskID
		p, ok := m.pending[key]
		if !ok && len(m.pending) >= maxPendingNotes {
			return nil
		}
		m.pending[key] = merge(p, n)
		return nil
	}
	before := note{title: t.Title, agent: t.Agent, seq: t.agentSeq}
	after := merge(before, n)
	if after == before {
		return nil
	}
	t.Title, t.Agent, t.agentSeq = after.title, after.agent, after.seq
	m.seq++
	t.Rev, w.Rev = m.seq, m.seq
	return t.item(w)
}

// merge adds n to a task's note: the first title stays (a task's request
// does not change), the agent of the latest event wins.
func merge(old, n note) note {
	if old.title == "" {
		old.title = n.title
	}
	if n.agent != "" && n.seq >= old.seq {
		old.agent, old.seq = n.agent, n.seq
	}
	return old
}

// takePending moves the note kept for a task the mirror now holds onto it.
// The mirror's lock is held.
func (m *mirror) takePending(t *Task) {
	key := t.Workflow + "\x00" + t.ID
	if p, ok := m.pending[key]; ok {
		delete(m.pending, key)
		t.Title, t.Agent, t.agentSeq = p.title, p.agent, p.seq
	}
}

// Running is the elapsed time of a task that runs, in milliseconds, for
// the page to count on from; 0 for a task that ended or has not started.
func (t *Task) Running(now time.Time) int64 {
	if t.Started.IsZero() || subjects.TerminalState(t.State) {
		return 0
	}
	return t.Elapsed(now).Milliseconds()
}

// Elapsed is how long the task has run: to its last update once it ended,
// to now while it runs; zero before a worker started it.
func (t *Task) Elapsed(now time.Time) time.Duration {
	if t.Started.IsZero() {
		return 0
	}
	if subjects.TerminalState(t.State) {
		return t.Took()
	}
	return max(now.Sub(t.Started), 0)
}
