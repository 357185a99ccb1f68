// Package runner defines how a role is executed: the Runner interface, the
// middlewares that wrap every role call (timeout, panic recovery,
// redaction of secrets), and the
// runners: the built-in sim, exec (any agent CLI as a subprocess) and openai
// (an OpenAI-compatible HTTP endpoint). A runner plugs in without touching
// the pipeline.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/subjects"
)

// ErrPermanent marks a role error that no retry can fix. The task fails at
// once with reason role_failed instead of being retried. Mark an error
// with Permanent or Permanentf, which keep its text as it is: the phrase
// is internal and never reaches the record.
var ErrPermanent = errors.New("permanent role error")

// Permanent marks err as one that no retry can fix: it matches
// ErrPermanent and the causes err wraps, and its text is err's alone.
func Permanent(err error) error { return permanentError{err} }

// Permanentf is Permanent(fmt.Errorf(format, a...)).
func Permanentf(format string, a ...any) error { return Permanent(fmt.Errorf(format, a...)) }

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }

// Unwrap returns ErrPermanent and the cause.
func (e permanentError) Unwrap() []error { return []error{ErrPermanent, e.err} }

// ErrTimeout is returned when a role exceeds its timeout.
var ErrTimeout = errors.New("role timed out")

// ErrPanic is returned when a role panicked.
var ErrPanic = errors.New("role panicked")

// Request is everything a role sees. Every field except Try, TraceParent
// and Workflow feeds the role's cache key.
type Request struct {
	Role subjects.Role `json:"role"`
	// Task is the request with defaults applied.
	Task subjects.TaskRequest `json:"task"`
	// Attempt is the implementer+judge round, from 1.
	Attempt int `json:"attempt"`
	// Plan is the planner's output (implementer and judge).
	Plan json.RawMessage `json:"plan,omitempty"`
	// Change is the implementer's output of this round (judge).
	Change json.RawMessage `json:"change,omitempty"`
	// Feedback is the judge's feedback on the previous round (implementer).
	Feedback string `json:"feedback,omitempty"`
	// Lessons are the most recent lessons for the task's type (planner),
	// given only to runners that use them (see LessonReader).
	Lessons []string `json:"lessons,omitempty"`
	// WorkspaceBase is the base commit of the workspace the role runs in,
	// part of the cache key so that the same prompt against another
	// starting tree is never served the other tree's answer. Empty (no
	// workspace) leaves the key as before.
	WorkspaceBase string `json:"workspace_base,omitempty"`
	// WorkspacePatch is the sha256 of the patch from the base the role
	// starts from or judges: for an implementer's attempt N>1 the previous
	// attempt's, for the judge its attempt's. Part of the cache key; empty
	// (attempt 1, no workspace) leaves the key as before.
	WorkspacePatch string `json:"workspace_patch,omitempty"`
	// Workspace is the task's workspace the role runs in (nil: none). It
	// is not part of the cache key: the base and patch digests above are.
	Workspace *Workspace `json:"-"`
	// Try is which try of this role this is for the task, from 1. It is not
	// part of the cache key.
	Try int `json:"-"`
	// Session is the agent session the implementer's attempt resumes (the
	// previous attempt's, from the task's record; nil: none). It is not
	// part of the cache key: the feedback and the patch it starts from are.
	Session *Session `json:"-"`
	// TraceParent is the W3C trace context of the role's span (or the
	// request's traceparent when tracing is off; "" when it has none).
	// Runners pass it on: exec as the TRACEPARENT variable, openai as the
	// traceparent header. It is not part of the cache key.
	TraceParent string `json:"-"`
	// Activity, when set, gets the role's live activity as it happens:
	// an exec runner's agent messages, tool calls and results (a preset's
	// streaming events) or stdout lines (a plain exec agent). It is called
	// from the runner's goroutines, one call at a time, and must return at
	// once: a receiver that publishes does so asynchronously and drops what
	// it cannot keep up with. WithRedact masks the secrets in the text; the
	// receiver escapes it (see LiveText). nil: no activity. It is not part
	// of the cache key.
	Activity func(Activity) `json:"-"`
}

// Workspace is what a role learns of its task's git workspace.
type Workspace struct {
	// Dir is the worktree: exec runners run there and get it as
	// DROVER_WORKSPACE.
	Dir string
	// Branch, Base and Head: the task's branch (DROVER_BRANCH), the pinned
	// base commit (DROVER_BASE_SHA) and the current head.
	Branch, Base, Head string
	// For the judge: the implementer attempt's diff stat and patch from
	// the base, bounded (PatchNote says what was cut, if anything), and
	// whether the attempt changed nothing.
	Stat      string
	Patch     string
	PatchNote string
	Empty     bool
	// Sandbox are the paths an exec runner's contained child sees: the
	// worktree, its git admin directory, the mirror, its private HOME
	// (workspace.Workspace.SandboxPaths). Empty: the worktree alone.
	Sandbox sandbox.Paths
}

// Result is a role's successful result.
type Result struct {
	// Output is the role's output as JSON.
	Output json.RawMessage `json:"output"`
	// Action is the judge's verdict (approve or reject); for other roles a
	// short word for what was done.
	Action string `json:"action"`
	// Reasoning explains the result; for a rejecting judge it is the
	// feedback the implementer gets.
	Reasoning string `json:"reasoning"`
	// Metadata is recorded in the audit event (token usage and the like).
	Metadata map[string]any `json:"metadata,omitempty"`
	// Session is the agent's session state after an implementer's run,
	// for the object store (nil: none kept). Not cached or recorded:
	// the pipeline stores it and records its reference.
	Session *SessionState `json:"-"`
}

// Runner executes one role.
type Runner interface {
	// Identity names the runner and every setting that changes its output
	// (model, base URL, argv, prompt template hash). It is part of the
	// cache key, so changing any of them never serves a stale answer.
	Identity() string
	// Run executes the role. It must return promptly when ctx is done.
	Run(ctx context.Context, req Request) (Result, error)
}

// LessonReader is implemented by runners whose output depends on lessons
// (a prompt template that shows them). Only those get Request.Lessons, so
// lessons enter the cache key exactly when they can change the output.
type LessonReader interface {
	UsesLessons() bool
}

// Func adapts a function to a Runner with the given identity.
type Func struct {
	ID string
	F  func(ctx context.Context, req Request) (Result, error)
	// InCaller says F works in the caller's goroutine and returns as soon
	// as its context is done (see Inline).
	InCaller bool
}

// Identity implements Runner.
func (f Func) Identity() string { return f.ID }

// RunsInline implements Inline.
func (f Func) RunsInline() bool { return f.InCaller }

// Run implements Runner.
func (f Func) Run(ctx context.Context, req Request) (Result, error) { return f.F(ctx, req) }

// Middleware wraps a Runner.
type Middleware func(Runner) Runner

// Chain wraps r in mws; the first middleware is the outermost.
func Chain(r Runner, mws ...Middleware) Runner {
	for i := len(mws) - 1; i >= 0; i-- {
		r = mws[i](r)
	}
	return r
}
