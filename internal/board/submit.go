package board

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/droverhq/drover/subjects"
)

// DefaultWorkflow is the workflow ID of a board whose file name leaves
// nothing usable.
const DefaultWorkflow = "board"

// WorkflowID returns the default workflow ID of a board file: its base
// name without the extension, each run of white space or control
// characters replaced by "-", cut to 128 bytes. "sprint 12.md" becomes
// "sprint-12".
func WorkflowID(name string) string {
	base := filepath.Base(name)
	id := sanitiseID(strings.TrimSuffix(base, filepath.Ext(base)))
	for len(id) > subjects.MaxIDBytes {
		_, size := utf8.DecodeLastRuneInString(id)
		id = id[:len(id)-size]
	}
	if subjects.ValidateID(id) != nil {
		return DefaultWorkflow
	}
	return id
}

// Meta is what a task request submitted from a board carries in
// metadata.board: which board and branch. It is part of the task's cache
// key, like all metadata.
type Meta struct {
	File   string `json:"file"` // the board's base name
	Branch string `json:"branch,omitempty"`
}

// MetaKey is the metadata key of Meta.
const MetaKey = "board"

// Requests returns a task request for each open task, in file order, in
// workflow. A task's type is its Type cell, or typ when the cell is empty
// (the worker's default when both are). Each carries Meta and its line;
// its Branch cell, when set, is the request's branch (validated at
// admission like any request's).
func (b *Board) Requests(workflow, typ string) []subjects.TaskRequest {
	var out []subjects.TaskRequest
	for _, r := range b.rows {
		t := r.task
		if t.Status != Open {
			continue
		}
		meta, _ := json.Marshal(Meta{File: filepath.Base(b.name), Branch: t.Branch}) // strings always encode
		req := subjects.TaskRequest{
			ID: t.ID, Workflow: workflow, Scope: t.Scope, Verification: t.Verification, Type: t.Type,
			Branch:   t.Branch,
			Review:   t.Review,
			Metadata: map[string]json.RawMessage{MetaKey: meta, subjects.MetaBoardLine: json.RawMessage(strconv.Itoa(t.Line))},
		}
		if req.Type == "" {
			req.Type = typ
		}
		if v, err := ParseBudget(t.Budget); t.Budget != "" && err == nil {
			req.Metadata[subjects.MetaTaskBudget] = json.RawMessage(strconv.FormatFloat(v, 'f', -1, 64))
		}
		out = append(out, req)
	}
	return out
}
