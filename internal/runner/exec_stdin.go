package runner

import (
	"encoding/json"
	"fmt"

	"github.com/droverhq/drover/subjects"
)

// stdin is what the child reads: the rendered prompt for an agent preset
// (the CLIs read their instruction from stdin), else the ExecInput JSON.
func (e *Exec) stdin(req Request, text string) ([]byte, error) {
	if e.cfg.Agent != "" {
		return []byte(text), nil
	}
	lessons := req.Lessons
	if lessons == nil {
		lessons = []string{}
	}
	task, err := execTask(req.Task)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(ExecInput{
		Version: ExecInputVersion, Role: req.Role, Attempt: req.Attempt,
		Plan: req.Plan, Change: req.Change, Feedback: req.Feedback, Lessons: lessons, Prompt: text,
	})
	if err != nil {
		return nil, err
	}
	// The task goes in with every documented key (the keys' order is
	// not part of the contract).
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["task"] = task
	return json.Marshal(m)
}

// execTask encodes the task of ExecInput with every documented key
// present: verification and type ("" when empty), max_attempts and
// metadata ({} when empty), which the request's own encoding leaves out
// when empty.
func execTask(t subjects.TaskRequest) (json.RawMessage, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode task: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encode task: %w", err)
	}
	for k, zero := range map[string]string{"verification": `""`, "type": `""`, "max_attempts": `0`, "metadata": `{}`} {
		if _, ok := m[k]; !ok {
			m[k] = json.RawMessage(zero)
		}
	}
	return json.Marshal(m)
}
