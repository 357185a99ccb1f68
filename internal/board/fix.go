package board

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/droverhq/drover/subjects"
)

// Fix rewrites a damaged board into canonical form and returns it with
// the problems it could not fix (those of the fixed text, at its lines).
// See FixReport for what it does.
func Fix(src []byte, name string) ([]byte, []Problem) {
	out, _, left := FixReport(src, name)
	return out, left
}

// FixReport is Fix that also returns each change it made, at the line of
// src it changed. It never drops a task row and never loses a cell's text:
//
//   - the header gets canonical column names, a later column that repeats a
//     known one is renamed "Name (N)", and a missing or wrong separator row
//     is written anew (keeping each column's alignment);
//   - a row with too few cells is padded with empty ones; a row with too
//     many has them joined into Scope with an escaped "\|" when that puts a
//     status marker in the Status column (an unescaped "|" in the scope),
//     and otherwise moved to a Notes column; empty extra cells are dropped;
//   - "[X]" becomes "[x]", an empty or blank status "[ ]", and any other
//     marker "[ ]" with the marker kept in the Notes column (never done:
//     only a known "[x]" means done);
//   - white space and control characters in an ID become "-", and a
//     repeated ID gets the first free suffix "-2", "-3", ...;
//   - stray separator rows and repeated header rows inside a table are
//     removed (they hold no task);
//   - every task table is aligned: cells padded to their column's width.
//
// Lines outside the task tables are kept byte for byte, with their line
// endings. A row with no ID, no scope or an invalid type is left for a
// person: it is among the problems returned.
func FixReport(src []byte, name string) (out []byte, changes, left []Problem) {
	b, _ := Parse(src, name)
	f := &fixer{b: b}
	fixed := make([]*fixedTable, len(b.tables))
	for i, t := range b.tables {
		fixed[i] = f.normalise(t)
	}
	f.renameIDs(fixed)
	var lines []line
	next := 0
	for i, t := range b.tables {
		lines = append(lines, b.lines[next:t.header]...)
		lines = append(lines, f.render(fixed[i])...)
		next = t.end
	}
	lines = append(lines, b.lines[next:]...)
	out = render(b.bom, lines)
	_, left = Parse(out, name)
	sort.SliceStable(f.changes, func(i, j int) bool { return f.changes[i].Line < f.changes[j].Line })
	return out, f.changes, left
}

type fixer struct {
	b       *Board
	changes []Problem
}

func (f *fixer) change(lineIdx int, format string, args ...any) {
	f.changes = append(f.changes, Problem{Line: lineIdx + 1, Msg: fmt.Sprintf(format, args...)})
}

// fixedTable is a task table in canonical form, before rendering.
type fixedTable struct {
	t     *table
	cols  []string
	align []int
	rows  []*fixedRow
}

type fixedRow struct {
	line  int // the source line index
	cells []string
	note  string
}

func (r *fixedRow) addNote(n string) {
	if r.note != "" {
		r.note += "; "
	}
	r.note += n
}

// normalise puts a table's header and cells in canonical form.
func (f *fixer) normalise(t *table) *fixedTable {
	m := len(t.cols)
	ft := &fixedTable{t: t, cols: make([]string, m), align: make([]int, m)}
	seen := map[string]int{}
	for i, c := range t.cols {
		name := c
		for _, k := range known {
			if strings.EqualFold(strings.TrimSpace(c), k) {
				name = k
			}
		}
		if first, dup := seen[strings.ToLower(name)]; dup && isKnown(name) {
			renamed := fmt.Sprintf("%s (%d)", name, i+1)
			f.change(t.header, "column %d repeats column %d (%s); renamed %q", i+1, first+1, name, renamed)
			name = renamed
		}
		seen[strings.ToLower(name)] = i
		ft.cols[i] = name
	}
	if t.sep < 0 {
		f.change(t.header, "inserted the missing separator row after the header")
	} else {
		bad := len(t.sepCells) != m
		for k, c := range t.sepCells {
			a, ok := alignOf(c.text)
			bad = bad || !ok
			if k < m {
				ft.align[k] = a
			}
		}
		if bad {
			f.change(t.sep, "separator row rewritten for the header's %d columns", m)
		}
	}
	for _, s := range t.strays {
		f.change(s.line, "removed a %s inside the table", s.what)
	}
	for _, r := range t.rows {
		fr := &fixedRow{line: r.line, cells: texts(r.cells)}
		if !r.lead || !r.trail {
			f.change(r.line, `added the row's missing "|"`)
		}
		if n := len(fr.cells); n < m {
			fr.cells = append(fr.cells, make([]string, m-n)...)
			f.change(r.line, "row had %d cells; padded with %d empty cell(s) to the header's %d", n, m-n, m)
		} else if n > m {
			f.fold(t, fr, m)
		}
		f.status(t, fr)
		ft.rows = append(ft.rows, fr)
	}
	f.notes(ft)
	return ft
}

func isKnown(name string) bool {
	for _, k := range known {
		if name == k {
			return true
		}
	}
	return false
}

// fold brings a row with more cells than the header's m down to m
// without losing text.
func (f *fixer) fold(t *table, fr *fixedRow, m int) {
	cells, n := fr.cells, len(fr.cells)
	extra := n - m
	if strings.Join(cells[m:], "") == "" {
		fr.cells = cells[:m]
		f.change(fr.line, "removed %d empty extra cell(s)", extra)
		return
	}
	sc, st := t.idx.scope, t.idx.status
	if sc < st && statusOf(cells[st+extra]) != Unknown && statusOf(cells[st]) == Unknown {
		joined := strings.TrimSpace(strings.Join(cells[sc:sc+extra+1], ` \| `))
		out := append(append(append([]string(nil), cells[:sc]...), joined), cells[sc+extra+1:]...)
		fr.cells = out
		f.change(fr.line, `row had %d cells; cells %d to %d joined into %s with an escaped "\|" (an unescaped "|" in the scope)`, n, sc+1, sc+extra+1, ColScope)
		return
	}
	fr.addNote("extra cells: " + strings.TrimSpace(strings.Join(cells[m:], ` \| `)))
	fr.cells = cells[:m]
	f.change(fr.line, "row had %d cells; the %d extra cell(s) moved to the %s column", n, extra, ColNotes)
}

// status writes the row's status marker in canonical form.
func (f *fixer) status(t *table, fr *fixedRow) {
	st := t.idx.status
	marker := fr.cells[st]
	switch {
	case marker == MarkerOpen || marker == MarkerDone:
		return
	case marker == "[X]":
		fr.cells[st] = MarkerDone
	case marker == "":
		fr.cells[st] = MarkerOpen
		f.change(fr.line, "empty status set to %q", MarkerOpen)
		return
	case strings.HasPrefix(marker, "[") && strings.HasSuffix(marker, "]") && strings.TrimSpace(marker[1:len(marker)-1]) == "":
		fr.cells[st] = MarkerOpen
	default:
		fr.cells[st] = MarkerOpen
		fr.addNote("status was " + marker)
		f.change(fr.line, "unknown status marker %q set to %q; the marker is kept in the %s column", marker, MarkerOpen, ColNotes)
		return
	}
	f.change(fr.line, "status %q written as %q", marker, fr.cells[st])
}

// notes adds the rows' notes to the Notes column, adding the column when
// the table has none and a row needs it.
func (f *fixer) notes(ft *fixedTable) {
	col := -1
	for i, c := range ft.cols {
		if col < 0 && strings.EqualFold(c, ColNotes) {
			col = i
		}
	}
	for _, r := range ft.rows {
		if r.note == "" {
			continue
		}
		if col < 0 {
			col = len(ft.cols)
			ft.cols = append(ft.cols, ColNotes)
			ft.align = append(ft.align, alignNone)
			for _, r := range ft.rows {
				r.cells = append(r.cells, "")
			}
			f.change(ft.t.header, "added a %s column for text that had no column", ColNotes)
		}
		if r.cells[col] != "" {
			r.cells[col] += "; "
		}
		r.cells[col] += r.note
	}
}

// renameIDs makes every ID valid where white space or control characters
// are all that is wrong, and unique across the board's tables.
func (f *fixer) renameIDs(fixed []*fixedTable) {
	type ref struct {
		fr  *fixedRow
		col int
		id  string
	}
	var refs []*ref
	all := map[string]bool{}
	for _, ft := range fixed {
		for _, fr := range ft.rows {
			r := &ref{fr: fr, col: ft.t.idx.id, id: unescape(fr.cells[ft.t.idx.id])}
			if clean := sanitiseID(r.id); clean != r.id && subjects.ValidateID(clean) == nil {
				f.change(fr.line, "task ID %q renamed to %q (no white space or control characters)", r.id, clean)
				r.id = clean
			}
			all[r.id] = true
			refs = append(refs, r)
		}
	}
	first := map[string]int{}
	for _, r := range refs {
		if subjects.ValidateID(r.id) != nil {
			continue
		}
		if l, dup := first[r.id]; dup {
			next := r.id
			for k := 2; all[next]; k++ {
				next = fmt.Sprintf("%s-%d", r.id, k)
			}
			f.change(r.fr.line, "duplicate task ID %q (first on line %d) renamed to %q", r.id, l, next)
			r.id = next
			all[next] = true
		}
		first[r.id] = r.fr.line + 1
		r.fr.cells[r.col] = strings.ReplaceAll(r.id, "|", `\|`)
	}
}

// sanitiseID replaces each run of white space or control characters (and
// invalid UTF-8) with "-".
func sanitiseID(id string) string {
	id = strings.ToValidUTF8(id, "-")
	return strings.Join(strings.FieldsFunc(id, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), "-")
}
