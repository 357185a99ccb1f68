package board

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/droverhq/drover/subjects"
)

// checkRow reports what is wrong with one row on its own.
func (p *parser) checkRow(r *row) {
	t, task := r.t, r.task
	if !r.lead || !r.trail {
		p.problem(r.line, "%s", pipeMsg("row", r.lead, r.trail))
	}
	if n, m := len(r.cells), len(t.cols); n != m {
		p.problem(r.line, "row has %d cells, the header has %d", n, m)
	}
	if task.ID == "" {
		p.problem(r.line, "row has no ID")
	} else if err := subjects.ValidateID(task.ID); err != nil {
		p.problem(r.line, "task ID %q: %v", task.ID, err)
	}
	switch {
	case task.Status != Unknown:
	case task.Marker == "":
		p.problem(r.line, "status is empty (want %q open or %q done)", MarkerOpen, MarkerDone)
	default:
		p.problem(r.line, "unknown status marker %q (want %q open or %q done)", task.Marker, MarkerOpen, MarkerDone)
	}
	if task.Scope == "" {
		p.problem(r.line, "task %s has no scope", orUnnamed(task.ID))
	}
	if task.Type != "" {
		if err := ValidateType(task.Type); err != nil {
			p.problem(r.line, "%v", err)
		}
	}
	if task.Budget != "" {
		if _, err := ParseBudget(task.Budget); err != nil {
			p.problem(r.line, "%v", err)
		}
	}
}

// ParseBudget reads a Budget cell: a number of USD, 0 or more, with an
// optional "$" before it.
func ParseBudget(cell string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(cell), "$"), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("budget %.40q must be a number of USD, 0 or more", cell)
	}
	return v, nil
}

// ValidateType applies the contract's rule for a task type: 1 to 64 bytes
// of a valid ID.
func ValidateType(typ string) error {
	if subjects.ValidateID(typ) != nil || len(typ) > subjects.MaxTypeBytes {
		return fmt.Errorf("type %q must be 1 to %d bytes with no white space", typ, subjects.MaxTypeBytes)
	}
	return nil
}

func orUnnamed(id string) string {
	if id == "" {
		return "(no ID)"
	}
	return id
}

// checkIDs reports each task ID used again, on every line after the first,
// naming the first: a board is one workflow, and a task ID is used once
// per workflow.
func (p *parser) checkIDs() {
	first := map[string]int{}
	for _, r := range p.b.rows {
		id := r.task.ID
		if id == "" {
			continue
		}
		if l, dup := first[id]; dup {
			p.problem(r.line, "duplicate task ID %q (first on line %d)", id, l)
			continue
		}
		first[id] = r.task.Line
	}
}
