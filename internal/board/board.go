// Package board reads and writes markdown task boards, the format of the
// system Drover replaces: prose and headings around one or more tables
//
//	| ID | Scope | Status | Branch | Verification |
//	|----|-------|--------|--------|--------------|
//	| T1 | Add a health endpoint | [ ] | feat/livez | GET /livez is 200 |
//
// A task table is one whose header row names at least the ID, Scope and
// Status columns (any case, any order); Branch, Verification and Type are
// optional, and any other column is kept as it is. A status cell is "[ ]"
// (open) or "[x]" (done, "[X]" too). Tables inside fenced code blocks are
// not boards. Everything outside the task tables, and every row nobody
// changed, is kept byte for byte: Parse then Render returns the source.
package board

import (
	"fmt"
	"strings"
)

// Status is a task's status cell.
type Status int

// The statuses a cell can hold.
const (
	// Unknown is any marker other than "[ ]", "[x]" and "[X]", empty included.
	Unknown Status = iota
	// Open is "[ ]": the task is still to do.
	Open
	// Done is "[x]" (or "[X]"): the task is done.
	Done
)

// String returns "open", "done" or "unknown".
func (s Status) String() string {
	switch s {
	case Open:
		return "open"
	case Done:
		return "done"
	}
	return "unknown"
}

// Canonical status markers.
const (
	MarkerOpen = "[ ]"
	MarkerDone = "[x]"
)

// Marker returns the canonical marker of Open and Done, "" otherwise.
func (s Status) Marker() string {
	switch s {
	case Open:
		return MarkerOpen
	case Done:
		return MarkerDone
	}
	return ""
}

// statusOf classifies a status cell as written.
func statusOf(marker string) Status {
	switch marker {
	case MarkerOpen:
		return Open
	case MarkerDone, "[X]":
		return Done
	}
	return Unknown
}

// Task is one row of a task table. Its fields hold the cells' text with
// "\|" unescaped; a column the table lacks, or a cell the row lacks, is "".
type Task struct {
	// Line is the row's line in the file, from 1.
	Line         int
	ID           string
	Scope        string
	Status       Status
	Marker       string // the status cell as written
	Branch       string
	Verification string
	Type         string
	// Budget is the task's budget in USD ("" none; "$" allowed before the
	// number), sent as metadata.budget_usd.
	Budget string
	// Review is the task's review gate (off, after_judge or instead; ""
	// the queue's default), sent as the request's review field.
	Review string
	// Cells holds every cell as written (trimmed, escapes kept), in column
	// order, extra columns included.
	Cells []string
}

// Problem is something wrong with a board, at a line (from 1; 0 for the
// file as a whole).
type Problem struct {
	Line int
	Msg  string
}

// String returns "line N: msg", or msg for the whole file.
func (p Problem) String() string {
	if p.Line == 0 {
		return p.Msg
	}
	return fmt.Sprintf("line %d: %s", p.Line, p.Msg)
}

// In formats the problem for a file the way compilers do: "FILE:LINE: msg"
// ("FILE: msg" for the whole file).
func (p Problem) In(file string) string {
	if p.Line == 0 {
		return file + ": " + p.Msg
	}
	return fmt.Sprintf("%s:%d: %s", file, p.Line, p.Msg)
}

// Board is a parsed board file. It keeps every line of the source; only the
// rows whose status changed (SetStatus, Sync) are rewritten by Render.
type Board struct {
	name   string
	bom    bool
	lines  []line
	tables []*table
	rows   []*row // every task row, in file order
}

// Workflow returns the default workflow ID of the board: WorkflowID of the
// file name it was parsed under.
func (b *Board) Workflow() string { return WorkflowID(b.name) }

// Tasks returns the board's tasks in file order.
func (b *Board) Tasks() []Task {
	out := make([]Task, 0, len(b.rows))
	for _, r := range b.rows {
		t := r.task
		t.Cells = append([]string(nil), t.Cells...)
		out = append(out, t)
	}
	return out
}

// Counts returns how many tasks the board has, and how many are open.
func (b *Board) Counts() (tasks, open int) {
	for _, r := range b.rows {
		if r.task.Status == Open {
			open++
		}
	}
	return len(b.rows), open
}

// find returns the first row with the ID.
func (b *Board) find(id string) *row {
	for _, r := range b.rows {
		if r.task.ID == id {
			return r
		}
	}
	return nil
}

// SetStatus marks the task done or open by rewriting its status cell in
// place (the rest of its line is kept). It reports whether the row changed.
func (b *Board) SetStatus(id string, done bool) (bool, error) {
	r := b.find(id)
	if r == nil {
		return false, fmt.Errorf("board %s: no task %q", b.name, id)
	}
	want := Open
	if done {
		want = Done
	}
	if r.task.Status == want {
		return false, nil
	}
	if err := b.setRow(r, want); err != nil {
		return false, err
	}
	return true, nil
}

// setRow rewrites a row's status cell in place.
func (b *Board) setRow(r *row, want Status) error {
	if r.t.idx.status >= len(r.cells) {
		return fmt.Errorf("%s:%d: task %s: the row has no status cell", b.name, r.task.Line, r.task.ID)
	}
	c := r.cells[r.t.idx.status]
	s := b.lines[r.line].text
	if c.text == "" {
		s = s[:c.rawStart] + " " + want.Marker() + " " + s[c.rawEnd:]
	} else {
		s = s[:c.start] + want.Marker() + s[c.end:]
	}
	b.lines[r.line].text = s
	r.parse(s)
	return nil
}

// Render returns the board as text: the source byte for byte, but for the
// rows whose status changed.
func (b *Board) Render() []byte { return render(b.bom, b.lines) }

const bom = "\uFEFF"

// line is one line of the source, without and with its terminator.
type line struct {
	text string
	eol  string // "\n", "\r\n", or "" for a last line without one
}

func render(withBOM bool, lines []line) []byte {
	var sb strings.Builder
	if withBOM {
		sb.WriteString(bom)
	}
	for _, l := range lines {
		sb.WriteString(l.text)
		sb.WriteString(l.eol)
	}
	return []byte(sb.String())
}

// splitLines splits text after each "\n"; "\r\n" stays one terminator.
func splitLines(text string) []line {
	var out []line
	for text != "" {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			out = append(out, line{text: text})
			break
		}
		l := line{text: text[:i], eol: "\n"}
		if strings.HasSuffix(l.text, "\r") {
			l.text, l.eol = l.text[:len(l.text)-1], "\r\n"
		}
		out = append(out, l)
		text = text[i+1:]
	}
	return out
}
