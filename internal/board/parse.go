package board

import (
	"fmt"
	"sort"
	"strings"
)

// Column names, as Fix writes them. Headers match them in any case.
const (
	ColID           = "ID"
	ColScope        = "Scope"
	ColStatus       = "Status"
	ColBranch       = "Branch"
	ColVerification = "Verification"
	ColType         = "Type"
	ColBudget       = "Budget"
	ColReview       = "Review"
	ColNotes        = "Notes"
)

// known lists the columns Drover reads, in canonical spelling.
var known = []string{ColID, ColScope, ColStatus, ColBranch, ColVerification, ColType, ColBudget, ColReview}

// columns holds the index of each known column, -1 when absent.
type columns struct{ id, scope, status, branch, verification, typ, budget, review int }

// table is one task table: a header, a separator, rows.
type table struct {
	header   int // line index of the header row
	sep      int // line index of the separator row, -1 if missing
	end      int // line index after the table's last line
	cols     []string
	idx      columns
	sepCells []cell
	rows     []*row
	strays   []stray // stray separator and repeated header rows, dropped by Fix
}

// stray is a body line that is no task: a separator or a repeated header.
type stray struct {
	line int
	what string
}

// row is one task row of a table.
type row struct {
	t           *table
	line        int // line index
	cells       []cell
	lead, trail bool
	task        Task
}

// parse reads the row from its line's text.
func (r *row) parse(s string) {
	r.cells, r.lead, r.trail = splitRow(s)
	ts := texts(r.cells)
	get := func(i int) string {
		if i < 0 || i >= len(ts) {
			return ""
		}
		return unescape(ts[i])
	}
	idx := r.t.idx
	marker := ""
	if idx.status < len(ts) {
		marker = ts[idx.status]
	}
	r.task = Task{
		Line: r.line + 1, ID: get(idx.id), Scope: get(idx.scope), Status: statusOf(marker), Marker: marker,
		Branch: get(idx.branch), Verification: get(idx.verification), Type: get(idx.typ), Budget: get(idx.budget), Review: get(idx.review), Cells: ts,
	}
}

// headerColumns matches a header row's cells to the known columns; ok is
// false unless ID, Scope and Status are all present. dups lists each later
// cell that repeats a known column: its index and the first one's.
func headerColumns(names []string) (c columns, ok bool, dups [][2]int) {
	c = columns{-1, -1, -1, -1, -1, -1, -1, -1}
	ptr := []*int{&c.id, &c.scope, &c.status, &c.branch, &c.verification, &c.typ, &c.budget, &c.review}
	for i, n := range names {
		for k, want := range known {
			if !strings.EqualFold(strings.TrimSpace(n), want) {
				continue
			}
			if *ptr[k] >= 0 {
				dups = append(dups, [2]int{i, *ptr[k]})
			} else {
				*ptr[k] = i
			}
		}
	}
	return c, c.id >= 0 && c.scope >= 0 && c.status >= 0, dups
}

// parser collects the tables and problems of one board.
type parser struct {
	b        *Board
	problems []Problem
}

func (p *parser) problem(lineIdx int, format string, args ...any) {
	p.problems = append(p.problems, Problem{Line: lineIdx + 1, Msg: fmt.Sprintf(format, args...)})
}

// Parse reads a board. name is the file's name, for messages and the
// default workflow ID. It returns the board as far as it could be read,
// and every problem found, in line order; a board with problems must not be
// submitted, but it still renders back to src exactly.
func Parse(src []byte, name string) (*Board, []Problem) {
	text := string(src)
	b := &Board{name: name}
	if strings.HasPrefix(text, bom) {
		b.bom, text = true, text[len(bom):]
	}
	b.lines = splitLines(text)
	p := &parser{b: b}
	fence := ""
	for i := 0; i < len(b.lines); i++ {
		s := b.lines[i].text
		if f := fenceOf(s); f != "" {
			switch {
			case fence == "":
				fence = f
			case closesFence(s, f, fence):
				fence = ""
			}
			continue
		}
		if fence != "" || len(indentOf(s)) > 3 || !strings.Contains(s, "|") || strings.HasPrefix(strings.TrimSpace(s), ">") {
			continue
		}
		cells, _, _ := splitRow(s)
		if _, ok, _ := headerColumns(texts(cells)); ok {
			i = p.table(i) - 1
		}
	}
	if len(b.tables) == 0 {
		p.problems = append(p.problems, Problem{Msg: "no task table: want a header row with ID, Scope and Status columns"})
	}
	p.checkIDs()
	sort.SliceStable(p.problems, func(i, j int) bool { return p.problems[i].Line < p.problems[j].Line })
	return b, p.problems
}

// table reads the task table whose header is at line index h and returns
// the line index after it.
func (p *parser) table(h int) int {
	lines := p.b.lines
	hc, lead, trail := splitRow(lines[h].text)
	t := &table{header: h, sep: -1, cols: texts(hc)}
	var dups [][2]int
	t.idx, _, dups = headerColumns(t.cols)
	for _, d := range dups {
		p.problem(h, "column %d (%q) repeats column %d; only the first is read", d[0]+1, t.cols[d[0]], d[1]+1)
	}
	if !lead || !trail {
		p.problem(h, "%s", pipeMsg("header row", lead, trail))
	}
	j := h + 1
	if j < len(lines) && isSeparatorLine(lines[j].text) {
		t.sep = j
		t.sepCells, _, _ = splitRow(lines[j].text)
		if n := len(t.sepCells); n != len(t.cols) {
			p.problem(j, "separator row has %d cells, the header has %d", n, len(t.cols))
		}
		for k, c := range t.sepCells {
			if _, ok := alignOf(c.text); !ok {
				p.problem(j, "separator cell %d is %q, want dashes with optional colons (---, :--, --:, :-:)", k+1, c.text)
			}
		}
		j++
	} else {
		p.problem(h, "the header row is not followed by a separator row (| --- | --- |)")
	}
	for ; j < len(lines); j++ {
		s := lines[j].text
		if strings.TrimSpace(s) == "" || !strings.Contains(s, "|") || fenceOf(s) != "" {
			break
		}
		if isSeparatorLine(s) {
			t.strays = append(t.strays, stray{j, "separator row"})
			p.problem(j, "separator row inside the table")
			continue
		}
		r := &row{t: t, line: j}
		r.parse(s)
		if sameNames(r.task.Cells, t.cols) {
			t.strays = append(t.strays, stray{j, "repeated header row"})
			p.problem(j, "repeated header row inside the table")
			continue
		}
		t.rows = append(t.rows, r)
		p.b.rows = append(p.b.rows, r)
		p.checkRow(r)
	}
	t.end = j
	p.b.tables = append(p.b.tables, t)
	return j
}

func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}

func pipeMsg(what string, lead, trail bool) string {
	switch {
	case !lead && !trail:
		return what + ` does not start or end with "|"`
	case !lead:
		return what + ` does not start with "|"`
	}
	return what + ` does not end with "|"`
}
