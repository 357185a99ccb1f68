// Package config reads Drover's configuration file: a YAML document with the
// worker's settings and, per role, which runner executes it (sim, exec or
// openai) and how. Flags and DROVER_* environment variables override the
// file; the file overrides the built-in defaults. A zero or absent field
// means "use the default", so a file only needs the settings it changes;
// the two exceptions (exec.inherit: [] and openai.temperature: 0) are
// noted on their fields.
//
// The file is decoded strictly: an unknown or misspelt key is an error that
// names the key and its line. Validate then checks values and names the
// field path of every bad one, e.g. "roles.judge.openai.model: required
// when runner is openai".
package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/workspace"
)

// Example is the commented example configuration printed by
// `drover config example` (a copy of examples/drover.yaml).
//
//go:embed example.yaml
var Example []byte

// File is the configuration file. Every field is optional.
type File struct {
	// NatsURL is the NATS server URL(s), comma-separated, as --nats-url.
	// Empty (the default) makes `drover serve` embed a server.
	NatsURL string `yaml:"nats_url"`
	// Prefix is the prefix of every subject, stream and bucket, as
	// --prefix. Empty means "drover".
	Prefix string `yaml:"prefix"`
	// Worker holds the worker's settings, as the flags of the same names.
	Worker Worker `yaml:"worker"`
	// PromptsDir is a directory of prompt templates that override the
	// embedded defaults: <dir>/planner.tmpl, <dir>/implementer.tmpl,
	// <dir>/judge.tmpl (a missing file keeps that role's default), as
	// --prompts. A relative path is taken from the working directory.
	// Empty means the embedded defaults only.
	PromptsDir string `yaml:"prompts_dir"`
	// Roles says which runner executes each role. A file that configures
	// any role must name the runner of every role (runner: sim for the
	// simulator): a role left out would otherwise run on the sim, whose
	// judge approves everything. A file with no roles runs the sim for
	// all three, as no file does.
	Roles Roles `yaml:"roles"`
	// Prices price role calls for the cost ledger: models per million
	// input and output tokens, runners per call and per minute (see
	// package ledger). Empty: events record tokens and wall time, at no
	// cost.
	Prices ledger.Prices `yaml:"prices"`
	// Budgets are the default spend limits of a task and of a workflow, in
	// USD (zero: none).
	Budgets ledger.Budgets `yaml:"budgets"`
	// Workspace gives each task a git worktree on its own branch, in which
	// the implementer and judge run; the change is committed, recorded in
	// the audit stream, cached, replayed and pushed (see
	// docs/workspaces-and-delivery.md). Off when workspace.repo is empty, as by
	// default. Each key has a --workspace-* flag of the same name.
	Workspace workspace.Config `yaml:"workspace"`
	// Delivery is what becomes of approved branches: delivery (branch,
	// merge, pull_request) and the pull_request block (see
	// docs/workspaces-and-delivery.md). Each key has a --delivery or --pr-* flag.
	Delivery `yaml:",inline"`
	// Merge configures the merge queue of delivery "merge" (see
	// docs/workspaces-and-delivery.md); each key has a --merge-* flag but
	// check.argv and max_feedback, which are in the file only.
	Merge mergequeue.Config `yaml:"merge"`
	// Review is the review gate: whether a person reviews approved tasks
	// (see docs/workspaces-and-delivery.md). Off by default.
	Review Review `yaml:"review"`
	// Sandbox contains the processes that run agent-controlled code (see
	// docs/operations.md, "The sandbox"). Default: bubblewrap.
	Sandbox Sandbox `yaml:"sandbox"`
}

// Worker is the worker's part of the file. Zero means the default noted,
// which is also the default of the flag of the same name.
type Worker struct {
	// Concurrency is how many tasks the worker runs at once (default 16).
	Concurrency int `yaml:"concurrency"`
	// Queues are the queues to consume (default [default]).
	Queues []string `yaml:"queues"`
	// AckWait is the consumer's ack wait; heartbeats go at a third of it
	// (default 30s; at least 1s).
	AckWait time.Duration `yaml:"ack_wait"`
	// MaxDeliver is how many deliveries a task gets before it fails
	// (default 5).
	MaxDeliver int `yaml:"max_deliver"`
	// MaxAckPending is the consumer's max ack pending; it must cover the
	// pools of all workers together (default 1000).
	MaxAckPending int `yaml:"max_ack_pending"`
	// Grace is how long a stopping worker lets running tasks finish
	// (default 30s).
	Grace time.Duration `yaml:"grace"`
	// CacheTTL is how long role results stay cached (default 24h).
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// RoleTimeout bounds every role call, whatever its runner (default
	// 30m). A role's own timeout applies within it.
	RoleTimeout time.Duration `yaml:"role_timeout"`
	// DLQMaxAge is how long the DLQ stream keeps an entry (default 30
	// days; negative: for ever).
	DLQMaxAge time.Duration `yaml:"dlq_max_age"`
	// DLQMaxMsgs is how many entries the DLQ stream keeps (default 0: no
	// limit but dlq_max_age).
	DLQMaxMsgs int64 `yaml:"dlq_max_msgs"`
	// LessonsMaxAge is how long the lessons stream keeps a lesson (default
	// 90 days; negative: for ever).
	LessonsMaxAge time.Duration `yaml:"lessons_max_age"`
	// LessonsScope is whose lessons a planner recalls: "workflow" (its own
	// workflow's, the default) or "fleet" (every workflow's of its type).
	LessonsScope string `yaml:"lessons_scope"`
	// CacheScope is who shares cached role results: "fleet" (every
	// workflow, the default) or "workflow" (the workflow ID is part of the
	// key). See docs/security.md, "The cache is shared across workflows".
	CacheScope string `yaml:"cache_scope"`
	// GCInterval is how often the worker runs drover gc (default 0: never).
	GCInterval time.Duration `yaml:"gc_interval"`
	// StateRetention is gc's --state-retention (default 30 days).
	StateRetention time.Duration `yaml:"state_retention"`
	// BlobRetention is gc's --blob-retention (default 30 days).
	BlobRetention time.Duration `yaml:"blob_retention"`
	// BlobMaxAge is gc's --blob-max-age (default 0: blobs that audit
	// events refer to are kept for ever).
	BlobMaxAge time.Duration `yaml:"blob_max_age"`
}

// Roles holds the configuration of each role.
type Roles struct {
	Planner     Role `yaml:"planner"`
	Implementer Role `yaml:"implementer"`
	Judge       Role `yaml:"judge"`
}

// Runner names. An empty runner means RunnerSim.
const (
	RunnerSim    = "sim"    // the built-in deterministic simulator
	RunnerExec   = "exec"   // a subprocess: an agent CLI or any program
	RunnerOpenAI = "openai" // an OpenAI-compatible chat completions endpoint
)

// Role is one role's runner and its settings.
type Role struct {
	// Runner is sim, exec or openai. Empty means sim, or exec when Agent
	// is set.
	Runner string `yaml:"runner"`
	// Agent names an agent preset (runner.Agents: claude-code, codex,
	// gemini, opencode) that runs on the exec runner: it knows the CLI's
	// argv, the variables it needs and how to read its answer, usage,
	// session and errors (see runner.ExecConfig.Agent). Exec's fields
	// override the preset's; Exec may then be left out. Empty means none.
	Agent string `yaml:"agent"`
	// Timeout bounds this role's calls, within worker.role_timeout (the
	// shorter wins). Zero means only worker.role_timeout applies.
	Timeout time.Duration `yaml:"timeout"`
	// Cache says whether the role's results are cached: looked up before
	// the role runs and stored after it, so the same input under another
	// workflow is not run again. Absent means the runner's default (see
	// Cached): sim and openai roles are cached, their output being a
	// function of the prompt; exec roles are not, an agent being
	// side-effecting (it edits files). true declares an exec agent pure;
	// false turns caching off for any role.
	Cache *bool `yaml:"cache"`
	// Exec configures the exec runner; required when Runner is exec
	// without an Agent, an error with another runner.
	Exec *Exec `yaml:"exec"`
	// OpenAI configures the openai runner; required when Runner is
	// openai, an error otherwise.
	OpenAI *OpenAI `yaml:"openai"`
}

// Exec configures the exec runner (runner.ExecConfig). The program is run
// directly, never through a shell, in its own process group, which is
// killed when the role ends, times out or is cancelled.
type Exec struct {
	// Argv is the program and its arguments (required, argv[0] not empty).
	// A bare name is looked up in the absolute entries of the child's
	// PATH; a name with a slash is taken relative to Dir.
	Argv []string `yaml:"argv"`
	// Dir is the working directory. Empty means Drover's own, or with
	// workspaces on (implementer and judge) the task's worktree; a role
	// with a dir runs there and finds the worktree in DROVER_WORKSPACE.
	Dir string `yaml:"dir"`
	// Env are variables set in the child's environment, on top of
	// Inherit. Empty means none. DROVER_ROLE is always set.
	Env map[string]string `yaml:"env"`
	// Inherit names the variables copied from Drover's environment when
	// set there; nothing else reaches the child. Absent means [PATH, HOME,
	// LANG, TMPDIR]; an empty list [] means none.
	Inherit []string `yaml:"inherit"`
	// PromptEnv is the variable that carries the rendered prompt, for CLIs
	// that take text. Empty means DROVER_PROMPT; "-" means no variable. A
	// prompt over 100 KiB goes to the prompt file instead.
	PromptEnv string `yaml:"prompt_env"`
	// PromptFile, when true, also writes the rendered prompt to a
	// temporary file, removed after the run, whose path is in
	// DROVER_PROMPT_FILE. Default false.
	PromptFile bool `yaml:"prompt_file"`
	// MaxOutputBytes bounds stdout; a child that writes more is killed and
	// the role fails. Zero means 4 MiB.
	MaxOutputBytes int `yaml:"max_output_bytes"`
	// MaxStderrBytes is how much of the end of stderr is kept for the
	// audit event's error field. Zero means 8 KiB.
	MaxStderrBytes int `yaml:"max_stderr_bytes"`
	// Network, when false, cuts the child's network (it needs the
	// bubblewrap sandbox). Absent or true: the network is shared, so
	// agents reach their model APIs.
	Network *bool `yaml:"network"`
	// ExecSecrets holds secret_env (see runners.go).
	ExecSecrets `yaml:",inline"`
}

// OpenAI configures the openai runner (runner.OpenAIConfig).
type OpenAI struct {
	// BaseURL is the API's base URL, up to and including /v1 (required):
	// https://api.openai.com/v1, http://localhost:11434/v1 (Ollama),
	// http://localhost:8000/v1 (vLLM), http://localhost:8080/v1
	// (llama.cpp server), http://localhost:1234/v1 (LM Studio).
	BaseURL string `yaml:"base_url"`
	// Model is the model name sent in every request (required).
	Model string `yaml:"model"`
	// APIKeyEnv names the environment variable holding the API key.
	// Empty means OPENAI_API_KEY. When that variable is unset or empty no
	// Authorization header is sent (local servers need none). The key
	// itself never appears in the file, logs or audit events.
	APIKeyEnv string `yaml:"api_key_env"`
	// Temperature is the sampling temperature, 0 to 2. Absent means the
	// server's default; 0 is sent as 0.
	Temperature *float64 `yaml:"temperature"`
	// MaxTokens bounds the completion's tokens. Zero means the server's
	// default.
	MaxTokens int `yaml:"max_tokens"`
	// RequestTimeout bounds one HTTP request, body included. Zero means
	// 5m.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// MaxRetries is how many times one role call retries a 408, 429, 5xx
	// or transport error, without spending a task delivery. Zero means 5;
	// negative means never.
	MaxRetries int `yaml:"max_retries"`
	// RetryBase is the first retry's backoff, doubled per retry with
	// jitter; a Retry-After header replaces it. Zero means 1s.
	// RetryMax caps every backoff, Retry-After included. Zero means 1m.
	RetryBase time.Duration `yaml:"retry_base"`
	RetryMax  time.Duration `yaml:"retry_max"`
	// System, when set, is sent as a system message before the rendered
	// prompt. Empty means no system message.
	System string `yaml:"system"`
	// OpenAISafety holds json_mode and allow_insecure_http (runners.go).
	OpenAISafety `yaml:",inline"`
}

// Load reads, strictly decodes and validates the file at path. Errors name
// the file, and the line and key of anything unknown or of the wrong type.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return f, nil
}

// Parse strictly decodes and validates one YAML document. An empty document
// is a valid File with every default.
func Parse(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, tidyYAMLError(err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document: want one")
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

var notFound = regexp.MustCompile(`field (\S+) not found in type \S+`)

// tidyYAMLError turns the decoder's "field x not found in type
// config.Worker" into "unknown field x", keeping the line.
func tidyYAMLError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = notFound.ReplaceAllString(m, "unknown field $1")
	}
	return errors.New(strings.Join(msgs, "; "))
}
