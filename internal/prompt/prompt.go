// Package prompt renders the text a role's model or agent reads. Each role
// has a text/template; defaults are embedded in the binary and a directory
// may override any of them. All templates are parsed and test-executed once
// at load, so a template error is reported at start-up with its file and
// line, never at the first task. A template's hash is part of the runner's
// identity, so editing a prompt never serves a stale cached answer.
package prompt

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/droverhq/drover/subjects"
)

//go:embed defaults/*.tmpl
var defaultFS embed.FS

// Data is what a role's prompt template sees.
type Data struct {
	// Role is the role being prompted.
	Role subjects.Role
	// Task is the request with defaults applied: ID, Workflow, Scope,
	// Verification, Type, MaxAttempts, Metadata.
	Task subjects.TaskRequest
	// Attempt is the implementer+judge round, from 1.
	Attempt int
	// Plan is the planner's output (JSON text), for the implementer and
	// the judge.
	Plan string
	// Change is the implementer's output (JSON text), for the judge.
	Change string
	// Feedback is the judge's feedback on the previous round, for the
	// implementer; empty in the first round.
	Feedback string
	// Lessons are recent lessons for the task's type; may be empty. They
	// are text from earlier runs, not the operator's: render them with
	// the lessons function, which quotes them as data.
	Lessons []string
	// Workspace is the task's git workspace, nil without one; for the
	// judge it holds the attempt's diff stat and bounded patch. Render it
	// with the workspace function, which quotes the patch as data.
	Workspace *Workspace
}

// Set holds one parsed template per role with the hash of its source.
// It is immutable after Load and safe for concurrent use.
type Set struct {
	roles map[subjects.Role]*entry
}

type entry struct {
	file   string // where the source came from, for messages
	source string
	hash   string
	tmpl   *template.Template
}

// funcs are the functions templates may call besides text/template's
// built-ins.
var funcs = template.FuncMap{
	// json renders any value as compact JSON: {{json .Task.Metadata}}.
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	// lessons renders lessons as a quoted data block:
	// {{if .Lessons}}{{lessons .Lessons}}{{end}}. See renderLessons.
	"lessons": renderLessons,
	// workspace renders the task's git change as a quoted data block:
	// {{if .Workspace}}{{workspace .Workspace}}{{end}}. See renderWorkspace.
	"workspace": renderWorkspace,
	// indent prefixes every line of s with n spaces.
	"indent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	},
}

// Defaults returns the embedded default templates. It panics if they do
// not load, which the package's tests rule out.
func Defaults() *Set {
	s, err := Load("")
	if err != nil {
		panic(fmt.Sprintf("prompt: embedded defaults: %v", err))
	}
	return s
}

// Render executes role's template with d.
func (s *Set) Render(role subjects.Role, d Data) (string, error) {
	e, ok := s.roles[role]
	if !ok {
		return "", fmt.Errorf("prompt: no template for role %q", role)
	}
	var b bytes.Buffer
	if err := e.tmpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("prompt: %s", templateError(err))
	}
	return b.String(), nil
}

// Hash returns the hex sha256 of role's template source, or "" for an
// unknown role. It is part of the runner's identity and so of the cache key.
func (s *Set) Hash(role subjects.Role) string {
	if e, ok := s.roles[role]; ok {
		return e.hash
	}
	return ""
}

// Source returns role's template text, or "" for an unknown role.
func (s *Set) Source(role subjects.Role) string {
	if e, ok := s.roles[role]; ok {
		return e.source
	}
	return ""
}

// File returns where role's template came from: "defaults/<role>.tmpl" for
// an embedded default, else the override's path.
func (s *Set) File(role subjects.Role) string {
	if e, ok := s.roles[role]; ok {
		return e.file
	}
	return ""
}

// parse builds an entry for role from source; file names it in errors.
func parse(role subjects.Role, file, source string) (*entry, error) {
	t, err := template.New(file).Option("missingkey=error").Funcs(funcs).Parse(source)
	if err != nil {
		return nil, fmt.Errorf("prompt: %s", templateError(err))
	}
	sum := sha256.Sum256([]byte(source))
	e := &entry{file: file, source: source, hash: hex.EncodeToString(sum[:]), tmpl: t}
	for _, d := range samples(role) {
		if err := t.Execute(&bytes.Buffer{}, d); err != nil {
			return nil, fmt.Errorf("prompt: %s", templateError(err))
		}
	}
	return e, nil
}

// templateError drops text/template's "template: " prefix, so the message
// starts with the file and line: "prompts/judge.tmpl:12: ...".
func templateError(err error) string {
	return strings.TrimPrefix(err.Error(), "template: ")
}

// samples are the data a template is test-executed with at load: one with
// every field set and one with every optional field empty, so both sides
// of an {{if}} on an optional field are checked.
func samples(role subjects.Role) []Data {
	full := Data{
		Role: role,
		Task: subjects.TaskRequest{
			ID: "T1.1", Workflow: "board-T1", Scope: "Implement the audit logger",
			Verification: "Audit log persists across restarts", Type: "feature", MaxAttempts: 3,
			Metadata: map[string]json.RawMessage{"repo": json.RawMessage(`"example"`)},
		},
		Attempt:  2,
		Plan:     `{"plan":"write it","steps":["write","test"]}`,
		Change:   `{"change":"wrote it","files":["audit.go"],"notes":"go test passes"}`,
		Feedback: "add a restart test",
		Lessons:  []string{"run the tests before answering"},
	}
	empty := Data{
		Role:    role,
		Task:    subjects.TaskRequest{ID: "T1", Workflow: "wf", Scope: "s", Type: subjects.DefaultTaskType, MaxAttempts: 1},
		Attempt: 1,
	}
	return []Data{full, empty}
}
