package board

import (
	"strings"
	"unicode/utf8"
)

// minWidth is the narrowest column: a separator cell needs three dashes.
const minWidth = 3

// render writes a fixed table in canonical form: "| a | b |" rows, every
// cell padded to its column's width (in runes), the header's indentation,
// and the line endings of the lines it replaces.
func (f *fixer) render(ft *fixedTable) []line {
	t, src := ft.t, f.b.lines
	widths := make([]int, len(ft.cols))
	for k := range widths {
		widths[k] = max(minWidth, utf8.RuneCountInString(ft.cols[k]))
		for _, r := range ft.rows {
			widths[k] = max(widths[k], utf8.RuneCountInString(r.cells[k]))
		}
	}
	indent := indentOf(src[t.header].text)
	sep := make([]string, len(ft.cols))
	for k, w := range widths {
		sep[k] = dashes(w, ft.align[k])
	}
	sepEOL := src[t.header].eol
	if t.sep >= 0 {
		sepEOL = src[t.sep].eol
	}
	out := []line{
		{text: formatRow(indent, ft.cols, widths), eol: src[t.header].eol},
		{text: formatRow(indent, sep, widths), eol: sepEOL},
	}
	for _, r := range ft.rows {
		out = append(out, line{text: formatRow(indent, r.cells, widths), eol: src[r.line].eol})
	}
	// The table ends as the source's did; every line before its last ends.
	eol := dominantEOL(src)
	for i := range out {
		if out[i].eol == "" {
			out[i].eol = eol
		}
	}
	out[len(out)-1].eol = src[t.end-1].eol
	if !sameText(out, src[t.header:t.end]) {
		f.change(t.header, "table aligned in canonical form")
	}
	return out
}

func formatRow(indent string, cells []string, widths []int) string {
	var sb strings.Builder
	sb.WriteString(indent)
	sb.WriteString("|")
	for k, c := range cells {
		sb.WriteString(" ")
		sb.WriteString(c)
		sb.WriteString(strings.Repeat(" ", widths[k]-utf8.RuneCountInString(c)))
		sb.WriteString(" |")
	}
	return sb.String()
}

// dashes is a separator cell of width w with the column's alignment.
func dashes(w, align int) string {
	switch align {
	case alignLeft:
		return ":" + strings.Repeat("-", w-1)
	case alignRight:
		return strings.Repeat("-", w-1) + ":"
	case alignCenter:
		return ":" + strings.Repeat("-", w-2) + ":"
	}
	return strings.Repeat("-", w)
}

// dominantEOL is the line ending of the source's first terminated line,
// "\n" when it has none.
func dominantEOL(lines []line) string {
	for _, l := range lines {
		if l.eol != "" {
			return l.eol
		}
	}
	return "\n"
}

func sameText(a, b []line) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
