package runner

import (
	"context"
	"fmt"
	"slices"
)

// scanCheckEvery is how many bytes scanObjects reads between checks of
// its context.
const scanCheckEvery = 64 << 10

// objSpan is a balanced {...} candidate: text[start:end]. The spans
// nested in it are spans[first:i], where i is its own index, because a
// span is recorded when it closes, after everything inside it.
type objSpan struct {
	start, end int
	first      int
}

// objSpans are the balanced candidates of a text in the order they close.
type objSpans []objSpan

// scanObjects finds, in one pass over text, every balanced pair of braces
// outside JSON strings. Strings are tracked only inside a brace, so a
// quote in prose does not derail the scan, and a raw newline ends a string
// (JSON strings cannot hold one), so a stray quote derails at most a line.
// An unbalanced '{' or '}' is skipped: the objects inside an unclosed
// brace are still found. It checks ctx every scanCheckEvery bytes and
// returns its error, wrapped, when it is done. Time and memory are linear
// in len(text).
func scanObjects(ctx context.Context, text []byte) (objSpans, error) {
	var (
		spans   objSpans
		open    []int // positions of the unclosed '{'
		top     []int // indices of the spans in no closed span yet, in order
		inStr   bool
		escaped bool
	)
	for i := 0; i < len(text); i++ {
		if i%scanCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("parse output: %w", err)
			}
		}
		c := text[i]
		if inStr {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"' || c == '\n':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = len(open) > 0
		case '{':
			open = append(open, i)
		case '}':
			if len(open) == 0 {
				continue
			}
			o := open[len(open)-1]
			open = open[:len(open)-1]
			first := len(spans)
			k := len(top)
			for k > 0 && spans[top[k-1]].start > o {
				k--
				first = spans[top[k]].first
			}
			top = append(top[:k], len(spans))
			spans = append(spans, objSpan{start: o, end: i + 1, first: first})
		}
	}
	return spans, nil
}

// roots returns the indices of the spans nested in no other, first to
// last (so the last is on top of a stack).
func (s objSpans) roots() []int { return s.within(0, len(s)) }

// children returns the indices of the spans directly inside span i, first
// to last.
func (s objSpans) children(i int) []int { return s.within(s[i].first, i) }

// within lists the outermost spans among s[lo:hi], first to last.
func (s objSpans) within(lo, hi int) []int {
	var out []int
	for j := hi - 1; j >= lo; j = s[j].first - 1 {
		out = append(out, j)
	}
	slices.Reverse(out)
	return out
}
