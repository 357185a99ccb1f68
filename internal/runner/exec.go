package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/subjects"
)

// Names and defaults of the exec runner.
const (
	// DefaultPromptEnv is the variable that gets the rendered prompt.
	DefaultPromptEnv = "DROVER_PROMPT"
	// NoPromptEnv as ExecConfig.PromptEnv puts the prompt in no variable.
	NoPromptEnv = "-"
	// PromptFileEnv holds the path of the prompt file, when one is written.
	PromptFileEnv = "DROVER_PROMPT_FILE"
	// WorkspaceEnv, BranchEnv and BaseSHAEnv hold the task's worktree, its
	// branch and its pinned base commit, when workspaces are on. A role
	// whose config names no dir runs in the worktree.
	WorkspaceEnv = "DROVER_WORKSPACE"
	BranchEnv    = "DROVER_BRANCH"
	BaseSHAEnv   = "DROVER_BASE_SHA"
	// RoleEnv holds the role's name.
	RoleEnv = "DROVER_ROLE"
	// TraceParentEnv holds the role span's W3C traceparent, when there is
	// one, so an agent can continue the trace.
	TraceParentEnv = "TRACEPARENT"
	// DefaultMaxOutputBytes bounds stdout.
	DefaultMaxOutputBytes = 4 << 20
	// DefaultMaxStderrBytes is how much of the end of stderr is kept.
	DefaultMaxStderrBytes = 8 << 10
	// ExecInputVersion is the version of the stdin schema (ExecInput).
	ExecInputVersion = 1

	// maxPromptEnvBytes: Linux refuses a single variable over 128 KiB, so
	// a larger prompt goes only to the prompt file.
	maxPromptEnvBytes = 100 << 10
	// execWaitDelay bounds how long Run waits for stdout and stderr to
	// close after the process exited or was killed, in case a process
	// outside its group still holds them.
	execWaitDelay = 2 * time.Second
)

// DefaultInherit are the variables an exec runner's child gets from the
// worker's environment when ExecConfig.Inherit is nil.
var DefaultInherit = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// ExecConfig configures an exec runner. Zero values take the defaults.
type ExecConfig struct {
	// Agent names an agent preset (AgentClaudeCode, AgentCodex,
	// AgentGemini, AgentOpencode; "" for none). A preset fills Argv,
	// Inherit, PromptEnv ("-") and MaxOutputBytes (64 MiB) when they are
	// zero and sets its variables under Env; the child gets the rendered
	// prompt on stdin instead of ExecInput, and the role's result is read
	// from the CLI's structured output (see agent.go).
	Agent string
	// Argv is the command and its arguments; required. Argv[0] is looked
	// up in the PATH of the child's environment (absolute entries only)
	// unless it contains a slash; a relative path is relative to Dir. It
	// is run directly, never through a shell.
	Argv []string
	// Dir is the child's working directory (default: the request's
	// workspace when it has one, else the worker's). A relative argv[0] is
	// found relative to Dir, not to the workspace.
	Dir string
	// Env is set in the child's environment, on top of Inherit.
	Env map[string]string
	// Inherit names the variables copied from the worker's environment
	// (nil: DefaultInherit; empty: none). Nothing else leaks to the child.
	Inherit []string
	// PromptEnv names the variable that gets the rendered prompt (default
	// DROVER_PROMPT; NoPromptEnv "-" for none). A prompt over 100 KiB is
	// not put in a variable (Linux caps one at 128 KiB); it is written to
	// the prompt file instead, as if PromptFile were set.
	PromptEnv string
	// PromptFile also writes the prompt to a temporary file, removed after
	// the run, whose path is in DROVER_PROMPT_FILE.
	PromptFile bool
	// MaxOutputBytes bounds stdout (default 4 MiB); a process that writes
	// more is killed and the role fails.
	MaxOutputBytes int
	// MaxStderrBytes is how much of the end of stderr is kept for the
	// error (default 8 KiB).
	MaxStderrBytes int
	// Sandbox contains the child (nil: it runs uncontained, as a plain
	// process; the worker always sets one). Under it the child sees the
	// request's Workspace.Sandbox paths (or, without a workspace, a
	// temporary working directory removed after the run), a private HOME
	// (Inherit's HOME and TMPDIR are replaced), and Dir read-only.
	Sandbox *sandbox.Sandbox
	// NoNetwork cuts the child's network (config: network: false); it
	// needs a bubblewrap Sandbox: with ModeNone NewExec refuses it, and
	// without a Sandbox every Run fails permanently. Default false: the
	// network is shared.
	NoNetwork bool
}

// withDefaults fills in the zero fields.
func (c ExecConfig) withDefaults() ExecConfig {
	if c.Inherit == nil {
		c.Inherit = DefaultInherit
	}
	if c.PromptEnv == "" {
		c.PromptEnv = DefaultPromptEnv
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.MaxStderrBytes == 0 {
		c.MaxStderrBytes = DefaultMaxStderrBytes
	}
	return c
}

// validate reports the first wrong field, by name.
func (c ExecConfig) validate() error {
	switch {
	case len(c.Argv) == 0 || c.Argv[0] == "":
		return fmt.Errorf("argv: empty; it needs at least the command")
	case c.MaxOutputBytes < 0:
		return fmt.Errorf("max_output_bytes: %d is negative", c.MaxOutputBytes)
	case c.MaxStderrBytes < 0:
		return fmt.Errorf("max_stderr_bytes: %d is negative", c.MaxStderrBytes)
	}
	for i, a := range c.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argv[%d]: contains a NUL byte", i)
		}
	}
	for name, v := range c.Env {
		if !validEnvName(name) || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("env: %q is not a valid variable (name without '=' or NUL, value without NUL)", name)
		}
	}
	for _, name := range c.Inherit {
		if !validEnvName(name) {
			return fmt.Errorf("inherit: %q is not a valid variable name", name)
		}
	}
	if c.PromptEnv != NoPromptEnv && !validEnvName(c.PromptEnv) {
		return fmt.Errorf("prompt_env: %q is not a valid variable name", c.PromptEnv)
	}
	if c.NoNetwork && c.Sandbox != nil && c.Sandbox.None() {
		return fmt.Errorf("network: false needs the bubblewrap sandbox, and sandbox.mode is %s", sandbox.ModeNone)
	}
	if c.Sandbox != nil && c.Dir != "" && (!filepath.IsAbs(c.Dir) || filepath.Clean(c.Dir) != c.Dir) {
		return fmt.Errorf("dir: %q must be a clean absolute path under the sandbox", c.Dir)
	}
	return nil
}

func validEnvName(s string) bool { return s != "" && !strings.ContainsAny(s, "=\x00") }

// Exec runs one role as a subprocess (any agent CLI or script). It sends
// the role's request as JSON on stdin (see ExecInput), the rendered prompt
// in an environment variable and optionally a file, and reads the result
// from stdout with ParseOutput. The child runs in its own process group,
// which is killed when the role ends, times out or is cancelled.
type Exec struct {
	role      subjects.Role
	cfg       ExecConfig
	prompts   *prompt.Set
	id        string
	waitDelay time.Duration
}

// NewExec returns an exec runner for role. prompts nil means
// prompt.Defaults(). A missing binary is found at the first Run, as a
// permanent error, since the binary may be installed after start-up.
func NewExec(role subjects.Role, cfg ExecConfig, prompts *prompt.Set) (*Exec, error) {
	if !role.Valid() {
		return nil, fmt.Errorf("exec runner: unknown role %q", role)
	}
	cfg, err := cfg.applyAgent()
	if err != nil {
		return nil, fmt.Errorf("exec runner for %s: %w", role, err)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("exec runner for %s: %w", role, err)
	}
	cfg.Argv = append([]string(nil), cfg.Argv...)
	cfg.Inherit = append([]string(nil), cfg.Inherit...)
	env := make(map[string]string, len(cfg.Env))
	for k, v := range cfg.Env {
		env[k] = v
	}
	cfg.Env = env
	if prompts == nil {
		prompts = prompt.Defaults()
	}
	e := &Exec{role: role, cfg: cfg, prompts: prompts, waitDelay: execWaitDelay}
	e.id = "exec/v1:" + e.fingerprint()
	return e, nil
}

// UsesLessons implements LessonReader: the child gets the lessons on stdin
// and the default prompts show them.
func (e *Exec) UsesLessons() bool { return true }

// Identity implements Runner: "exec/v1:" and a sha256 over the role, argv,
// dir, Env's names and values, Inherit's names, the prompt settings,
// whether the network is cut and the role's template hash. Limits and the
// sandbox are left out: they change what the child may do, not what a
// child that succeeds answers.
func (e *Exec) Identity() string { return e.id }

func (e *Exec) fingerprint() string {
	b, err := json.Marshal(struct {
		Role       subjects.Role     `json:"role"`
		Agent      string            `json:"agent,omitempty"`
		Argv       []string          `json:"argv"`
		Dir        string            `json:"dir"`
		Env        map[string]string `json:"env"` // encoded with sorted keys
		Inherit    []string          `json:"inherit"`
		PromptEnv  string            `json:"prompt_env"`
		PromptFile bool              `json:"prompt_file"`
		Template   string            `json:"template"`
		NoNetwork  bool              `json:"no_network,omitempty"` // omitted when false: identities stay as they were
	}{e.role, e.cfg.Agent, e.cfg.Argv, e.cfg.Dir, e.cfg.Env, e.cfg.Inherit, e.cfg.PromptEnv, e.cfg.PromptFile, e.prompts.Hash(e.role), e.cfg.NoNetwork})
	return identityHash("exec", b, err)
}

// identityHash is the hex sha256 of a runner's settings encoded as b; the
// encoding of plain settings cannot fail, so err is a bug of the runner.
func identityHash(runner string, b []byte, err error) string {
	if err != nil {
		panic(fmt.Sprintf("runner: %s identity: %v", runner, err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ExecInput is the JSON object an exec runner writes to the child's stdin,
// then closes stdin. Every key is always present:
//
//	{
//	  "version": 1,
//	  "role": "planner" | "implementer" | "judge",
//	  "task": {"id", "workflow", "scope", "verification", "type", "max_attempts", "metadata"},
//	  "attempt": 1,           // implementer+judge round, from 1
//	  "plan": {...} | null,   // the planner's output (implementer, judge)
//	  "change": {...} | null, // the implementer's output (judge)
//	  "feedback": "",         // the judge's feedback on the last round (implementer)
//	  "lessons": ["..."],     // recent lessons for the task's type; may be []
//	  "prompt": "..."         // the role's rendered prompt template
//	}
//
// The child answers on stdout as ParseOutput describes: JSON
// ({"plan","steps"}, {"change","files","notes"}, {"verdict","feedback"}) or,
// for the planner and implementer, plain text. Exit status 0 means success;
// any other status is a role error (retried) whose message ends with the
// tail of stderr.
type ExecInput struct {
	Version  int                  `json:"version"`
	Role     subjects.Role        `json:"role"`
	Task     subjects.TaskRequest `json:"task"`
	Attempt  int                  `json:"attempt"`
	Plan     json.RawMessage      `json:"plan"`
	Change   json.RawMessage      `json:"change"`
	Feedback string               `json:"feedback"`
	Lessons  []string             `json:"lessons"`
	Prompt   string               `json:"prompt"`
}

// promptData is what the role's template sees for req.
func promptData(req Request) prompt.Data {
	d := prompt.Data{
		Role: req.Role, Task: req.Task, Attempt: req.Attempt,
		Plan: string(req.Plan), Change: string(req.Change), Feedback: req.Feedback, Lessons: req.Lessons,
	}
	if w := req.Workspace; w != nil {
		d.Workspace = &prompt.Workspace{Branch: w.Branch, Base: w.Base, Head: w.Head, Stat: w.Stat,
			Patch: w.Patch, PatchNote: w.PatchNote, Empty: w.Empty}
	}
	return d
}
