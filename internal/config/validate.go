package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Validate checks every field and reports all problems at once, each
// naming its field path and value, e.g. "worker.ack_wait: -1s must not be
// negative" or "roles.judge.openai.model: required when runner is openai".
func (f *File) Validate() error {
	var v validator
	if f.Prefix != "" {
		if _, err := subjects.NewNames(f.Prefix); err != nil {
			v.add("prefix", "%v", err)
		}
	}
	f.Worker.validate(&v)
	f.Review.validate(&v)
	f.Sandbox.validate(&v)
	for _, r := range subjects.Roles {
		f.Roles.For(r).validate(&v, "roles."+string(r))
	}
	if err := f.Roles.complete(); err != nil {
		v.errs = append(v.errs, err)
	}
	for _, err := range []error{f.Prices.Validate(), f.Budgets.Validate()} {
		if err != nil {
			v.errs = append(v.errs, err)
		}
	}
	f.Delivery.validate(&v)
	if err := validateMerge(string(f.Delivery.Delivery), f.Merge, f.Workspace.Enabled()); err != nil {
		v.errs = append(v.errs, err)
	}
	if f.Workspace.Enabled() {
		ws := f.Workspace // Validate fills defaults: check a copy
		if ws.Dir == "" {
			ws.Dir = "workspaces" // serve's default is under --data
		}
		if err := ws.Validate(); err != nil {
			v.errs = append(v.errs, err)
		}
	}
	return v.err()
}

// ErrRolesIncomplete is wrapped by the error of a file that configures some
// roles but does not name the runner of every one.
var ErrRolesIncomplete = errors.New("name every role (runner: sim to use the simulator)")

// complete checks that a file configuring any role names the runner of
// every role: a role silently left on the sim would have its results (an
// approving verdict, for the judge) made up. No roles at all is the sim
// everywhere, as with no file.
func (rs *Roles) complete() error {
	var configured bool
	var missing []string
	for _, r := range subjects.Roles {
		rc := rs.For(r)
		configured = configured || *rc != (Role{})
		if rc.Runner == "" && rc.Agent == "" { // an agent names its runner: exec
			missing = append(missing, "roles."+string(r))
		}
	}
	if !configured || len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	verb := "is"
	if len(missing) > 1 {
		verb = "are"
	}
	return fmt.Errorf("%s %s not set; %w", joinAnd(missing), verb, ErrRolesIncomplete)
}

// joinAnd joins words as "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// For returns the configuration of role r (the zero Role, which runs the
// sim, for an unknown role).
func (rs *Roles) For(r subjects.Role) *Role {
	switch r {
	case subjects.RolePlanner:
		return &rs.Planner
	case subjects.RoleImplementer:
		return &rs.Implementer
	case subjects.RoleJudge:
		return &rs.Judge
	}
	return &Role{}
}

// RunnerName returns the role's runner, "sim" when none is set.
func (r *Role) RunnerName() string {
	if r.Runner == "" && r.Agent != "" {
		return RunnerExec
	}
	if r.Runner == "" {
		return RunnerSim
	}
	return r.Runner
}

// Cached reports whether the role's results are cached, and why, in a few
// words for `drover config check`. An explicit cache: wins; else sim and
// openai roles are cached (their output is a function of the prompt) and
// exec roles are not: an agent that edits files has side effects a cached
// answer would skip, and without a workspace (whose base commit would be
// part of the key) the same prompt is no proof of the same starting point.
func (r *Role) Cached() (bool, string) {
	switch {
	case r.Cache != nil && *r.Cache:
		return true, "cache: true"
	case r.Cache != nil:
		return false, "cache: false"
	case r.RunnerName() == RunnerExec:
		return false, "exec without workspace (set cache: true if the agent is pure)"
	default:
		return true, r.RunnerName() + " output is a function of the prompt"
	}
}

// RoleCached is Cached for role r of this file: with workspaces on, an
// exec implementer or judge without an explicit cache: is cached, because
// it runs in the task's worktree, whose pinned base commit and starting
// patch are part of its key, and the implementer's side effects (the
// change) are captured with its result and replayed on a hit. A planner
// runs outside the worktree and keeps Cached's answer.
func (f *File) RoleCached(r subjects.Role) (bool, string) {
	rc := f.Roles.For(r)
	if rc.Cache == nil && rc.RunnerName() == RunnerExec && f.Workspace.Enabled() && r != subjects.RolePlanner {
		if r == subjects.RoleImplementer {
			return true, "exec in a workspace: its change is recorded and replayed on a hit"
		}
		return true, "exec in a workspace: the base and the patch it judges are in the key"
	}
	if rc.Cache == nil && rc.RunnerName() == RunnerExec && f.Workspace.Enabled() {
		return false, "exec planner runs outside the workspace (set cache: true if the agent is pure)"
	}
	return rc.Cached()
}

func (w *Worker) validate(v *validator) {
	v.nonNegative("worker.concurrency", w.Concurrency)
	for i, q := range w.Queues {
		if err := subjects.ValidateQueue(q); err != nil {
			v.add(fmt.Sprintf("worker.queues[%d]", i), "%v", err)
		}
	}
	if w.AckWait != 0 && w.AckWait < time.Second {
		v.add("worker.ack_wait", "%s must be at least 1s (0 means the default 30s)", w.AckWait)
	}
	v.nonNegative("worker.max_deliver", w.MaxDeliver)
	v.nonNegative("worker.max_ack_pending", w.MaxAckPending)
	if w.MaxAckPending > 0 && w.Concurrency > 0 && w.MaxAckPending < w.Concurrency {
		v.add("worker.max_ack_pending", "%d is below worker.concurrency %d: it must cover the pools of all workers together", w.MaxAckPending, w.Concurrency)
	}
	v.duration("worker.grace", w.Grace)
	v.duration("worker.cache_ttl", w.CacheTTL)
	v.duration("worker.role_timeout", w.RoleTimeout)
	v.nonNegative("worker.dlq_max_msgs", int(w.DLQMaxMsgs))
	if _, err := cache.ParseScope(w.CacheScope); err != nil {
		v.add("worker.cache_scope", "%q: want fleet or workflow", w.CacheScope)
	}
	if w.LessonsScope != "" && w.LessonsScope != "workflow" && w.LessonsScope != "fleet" {
		v.add("worker.lessons_scope", "%q: want workflow or fleet", w.LessonsScope)
	}
	v.duration("worker.gc_interval", w.GCInterval)
	v.duration("worker.state_retention", w.StateRetention)
	v.duration("worker.blob_retention", w.BlobRetention)
	v.duration("worker.blob_max_age", w.BlobMaxAge)
}

func (r *Role) validate(v *validator, path string) {
	name := r.RunnerName()
	switch name {
	case RunnerSim, RunnerExec, RunnerOpenAI:
	default:
		v.add(path+".runner", "%q is not a runner: want sim, exec or openai", r.Runner)
	}
	v.duration(path+".timeout", r.Timeout)
	if r.Exec != nil && name != RunnerExec {
		v.add(path+".exec", "set but runner is %s (want runner: exec)", name)
	}
	if r.OpenAI != nil && name != RunnerOpenAI {
		v.add(path+".openai", "set but runner is %s (want runner: openai)", name)
	}
	if r.Agent != "" && !slices.Contains(runner.Agents, r.Agent) {
		v.add(path+".agent", "%q is not an agent: want %s", r.Agent, strings.Join(runner.Agents, ", "))
	}
	if r.Agent != "" && name != RunnerExec {
		v.add(path+".agent", "set but runner is %s (an agent runs on runner: exec)", name)
	}
	switch {
	case name == RunnerExec && r.Exec == nil && r.Agent == "":
		v.add(path+".exec", "required when runner is exec (or name an agent)")
	case name == RunnerExec && r.Exec != nil:
		r.Exec.validate(v, path+".exec", r.Agent != "")
	case name == RunnerOpenAI && r.OpenAI == nil:
		v.add(path+".openai", "required when runner is openai")
	case name == RunnerOpenAI:
		r.OpenAI.validate(v, path+".openai")
	}
}

func (e *Exec) validate(v *validator, path string, preset bool) {
	switch {
	case len(e.Argv) == 0 && preset: // the preset's
	case len(e.Argv) == 0:
		v.add(path+".argv", "required when runner is exec: the program and its arguments")
	case strings.TrimSpace(e.Argv[0]) == "":
		v.add(path+".argv[0]", "%q: the program must not be empty", e.Argv[0])
	}
	for k := range e.Env {
		v.envName(path+".env", k)
	}
	for i, k := range e.Inherit {
		v.envName(fmt.Sprintf("%s.inherit[%d]", path, i), k)
	}
	if e.PromptEnv != "" && e.PromptEnv != runner.NoPromptEnv {
		v.envName(path+".prompt_env", e.PromptEnv)
	}
	v.nonNegative(path+".max_output_bytes", e.MaxOutputBytes)
	v.nonNegative(path+".max_stderr_bytes", e.MaxStderrBytes)
	e.ExecSecrets.validate(v, path)
}

func (o *OpenAI) validate(v *validator, path string) {
	if strings.TrimSpace(o.BaseURL) == "" {
		v.add(path+".base_url", "required when runner is openai, e.g. https://api.openai.com/v1")
	} else if u, err := url.Parse(strings.TrimSpace(o.BaseURL)); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(path+".base_url", "%q must be an absolute http or https URL", redactURL(o.BaseURL))
	}
	if strings.TrimSpace(o.Model) == "" {
		v.add(path+".model", "required when runner is openai")
	}
	if o.APIKeyEnv != "" {
		v.envName(path+".api_key_env", o.APIKeyEnv)
	}
	if t := o.Temperature; t != nil && (math.IsNaN(*t) || math.IsInf(*t, 0) || *t < 0 || *t > 2) {
		v.add(path+".temperature", "%v must be between 0 and 2", *t)
	}
	v.nonNegative(path+".max_tokens", o.MaxTokens)
	v.duration(path+".request_timeout", o.RequestTimeout)
	v.duration(path+".retry_base", o.RetryBase)
	v.duration(path+".retry_max", o.RetryMax)
	if o.RetryBase > 0 && o.RetryMax > 0 && o.RetryMax < o.RetryBase {
		v.add(path+".retry_max", "%s must be at least retry_base %s", o.RetryMax, o.RetryBase)
	}
	o.OpenAISafety.validate(v, path, o.BaseURL)
}

// redactURL hides a password in a URL that carries one.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

// validator collects problems, each prefixed with its field path.
type validator struct{ errs []error }

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

func (v *validator) nonNegative(path string, n int) {
	if n < 0 {
		v.add(path, "%d must not be negative (0 means the default)", n)
	}
}

func (v *validator) duration(path string, d time.Duration) {
	if d < 0 {
		v.add(path, "%s must not be negative (0 means the default)", d)
	}
}

// envName checks an environment variable name: letters, digits and
// underscores, not starting with a digit.
func (v *validator) envName(path, name string) {
	ok := name != "" && !(name[0] >= '0' && name[0] <= '9')
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
	}
	if !ok {
		v.add(path, "%q is not an environment variable name", name)
	}
}

func (v *validator) err() error { return errors.Join(v.errs...) }
