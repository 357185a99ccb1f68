package board

import "strings"

// cell is one cell of a table line: its trimmed text (escapes kept) and
// where it sits in the line.
type cell struct {
	text             string
	start, end       int // the trimmed text's byte span
	rawStart, rawEnd int // the span between the pipes
}

// splitRow splits a table line into cells at each "|" that is not escaped
// as "\|", and reports whether the line starts and ends with a pipe.
func splitRow(s string) (cells []cell, lead, trail bool) {
	a, b := 0, len(s)
	for a < b && isBlank(s[a]) {
		a++
	}
	for b > a && isBlank(s[b-1]) {
		b--
	}
	if a < b && s[a] == '|' {
		lead = true
		a++
	}
	if b > a && s[b-1] == '|' && !(b-2 >= a && s[b-2] == '\\') {
		trail = true
		b--
	}
	from := a
	for i := a; i <= b; i++ {
		if i < b && s[i] == '\\' && i+1 < b && s[i+1] == '|' {
			i++
			continue
		}
		if i < b && s[i] != '|' {
			continue
		}
		c := cell{rawStart: from, rawEnd: i, start: from, end: i}
		for c.start < c.end && isBlank(s[c.start]) {
			c.start++
		}
		for c.end > c.start && isBlank(s[c.end-1]) {
			c.end--
		}
		c.text = s[c.start:c.end]
		cells = append(cells, c)
		from = i + 1
	}
	return cells, lead, trail
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// texts returns the cells' texts.
func texts(cells []cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.text
	}
	return out
}

// unescape turns the "\|" of a cell into "|".
func unescape(s string) string { return strings.ReplaceAll(s, `\|`, "|") }

// indentOf returns the spaces a line starts with.
func indentOf(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " "))] }

// isSeparatorLine reports whether a line is made of pipes, colons, dashes
// and blanks only, with at least one dash: a table's delimiter row.
func isSeparatorLine(s string) bool {
	if !strings.Contains(s, "-") {
		return false
	}
	return strings.Trim(s, "|:- \t") == ""
}

// Alignment of a column, from its separator cell.
const (
	alignNone = iota
	alignLeft
	alignRight
	alignCenter
)

// alignOf reads a separator cell; ok is false unless it is :?-+:?.
func alignOf(c string) (align int, ok bool) {
	l, r := strings.HasPrefix(c, ":"), strings.HasSuffix(c, ":") && len(c) > 1
	inner := strings.TrimSuffix(strings.TrimPrefix(c, ":"), ":")
	if inner == "" || strings.Trim(inner, "-") != "" {
		return alignNone, false
	}
	switch {
	case l && r:
		return alignCenter, true
	case l:
		return alignLeft, true
	case r:
		return alignRight, true
	}
	return alignNone, true
}

// fenceOf returns the fence a line opens or closes (a run of three or more
// backticks or tildes after at most three spaces), or "".
func fenceOf(s string) string {
	t := strings.TrimLeft(s, " ")
	if len(s)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return ""
	}
	n := len(t) - len(strings.TrimLeft(t, t[:1]))
	if n < 3 {
		return ""
	}
	return t[:n]
}

// closesFence reports whether a fence line closes the open fence: the same
// character, at least as long, and nothing after it.
func closesFence(s, fence, open string) bool {
	return fence[0] == open[0] && len(fence) >= len(open) &&
		strings.TrimSpace(strings.TrimLeft(s, " ")[len(fence):]) == ""
}
