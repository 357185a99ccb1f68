// Package table renders the cells of the aligned text tables that Drover
// prints for people: an empty cell shows as "-", and untrusted text is kept
// on one line with its control characters and bidi overrides escaped.
package table

import (
	"strings"

	"github.com/droverhq/drover/internal/redact"
)

// Dash renders an empty cell as "-".
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Cell makes s safe for one cell of a tab-aligned table: tabs and line
// breaks become spaces (they would break the row or the alignment),
// control characters and bidi overrides are escaped (redact.Terminal), and
// an empty cell shows as "-".
func Cell(s string) string {
	return Dash(redact.Terminal(strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)))
}
