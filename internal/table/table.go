// Package table renders the cells of the aligned text tables that Drover
// prints for people: an empty cell shows as "-", and untrusted text is kept
// on one line with its control characters and bidi overrides escaped.
package table

import (
	"fmt"
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

// Bytes renders n bytes with a binary unit, e.g. "1.5 KiB".
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
