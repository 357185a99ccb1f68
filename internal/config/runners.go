package config

import (
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/subjects"
)

// ExecSecrets are the exec runner's settings about secrets.
type ExecSecrets struct {
	// SecretEnv names variables of Env and Inherit whose values are
	// secrets: they are masked in everything the runner hands back (see
	// File.Secrets). Variables whose names contain KEY, TOKEN, SECRET,
	// PASSWORD, PASSWD or CREDENTIAL are secret without being listed.
	SecretEnv []string `yaml:"secret_env"`
}

func (e ExecSecrets) validate(v *validator, path string) {
	for i, k := range e.SecretEnv {
		v.envName(fmt.Sprintf("%s.secret_env[%d]", path, i), k)
	}
}

// OpenAISafety are the openai runner's settings about JSON mode and
// transport security.
type OpenAISafety struct {
	// JSONMode asks the server for a JSON object answer
	// (response_format {"type":"json_object"}): auto (the default) sends
	// it and, when the server answers 400 naming response_format, retries
	// once without it and stops sending it; on always sends it; off never.
	JSONMode string `yaml:"json_mode"`
	// AllowInsecureHTTP allows a plain http:// base_url whose host is not
	// a loopback address, which would send the API key in clear. Default
	// false: such a base_url is refused.
	AllowInsecureHTTP bool `yaml:"allow_insecure_http"`
}

func (o OpenAISafety) validate(v *validator, path, baseURL string) {
	switch o.JSONMode {
	case "", runner.JSONModeAuto, runner.JSONModeOn, runner.JSONModeOff:
	default:
		v.add(path+".json_mode", "%q: want auto, on or off", o.JSONMode)
	}
	if !o.AllowInsecureHTTP && runner.InsecureHTTP(baseURL) {
		v.add(path+".base_url", "%q is plain http to a host that is not loopback, so the API key would cross the network in clear: use https, or set allow_insecure_http: true", redact.URL(baseURL))
	}
}

// natsSecretEnv are the variables that hold NATS credentials (the
// connection flags' environment, see docs/security.md).
var natsSecretEnv = []string{"NATS_PASSWORD", "NATS_TOKEN", "DROVER_PASSWORD", "DROVER_TOKEN"}

// natsURLEnv are the variables that hold NATS URLs.
var natsURLEnv = []string{"NATS_URL", "DROVER_NATS_URL"}

// Secrets returns the secrets the file and the environment give the
// worker, for a redact.Redactor: the value of each openai role's API key
// variable; the values of each exec role's env and inherited variables
// that are listed in secret_env or named like a secret (see
// redact.SecretEnvName), an agent preset's inherited ones included, and
// the credentials in an agent's proxy variables; NATS_PASSWORD, NATS_TOKEN, DROVER_PASSWORD and
// DROVER_TOKEN; and the credentials in nats_url, NATS_URL,
// DROVER_NATS_URL and every base_url; the value of pull_request.token_env.
// extra are added as they are (the --password and --token flags).
func (f *File) Secrets(extra ...string) []string {
	named := f.NamedSecrets(extra...)
	out := make([]string, len(named))
	for i, s := range named {
		out[i] = s.Value
	}
	return out
}

// NamedSecrets are Secrets, each with the name an operator knows it by:
// its variable, or the field that holds it. extra are named "a
// connection or repository secret".
func (f *File) NamedSecrets(extra ...string) []redact.Secret {
	var out []redact.Secret
	for _, v := range extra {
		out = append(out, redact.Secret{Name: "a connection or repository secret", Value: v})
	}
	urls := func(name, v string) {
		for _, s := range redact.URLSecrets(v) {
			out = append(out, redact.Secret{Name: "the credentials in " + name, Value: s})
		}
	}
	env := func(name string) {
		if v, ok := os.LookupEnv(name); ok {
			out = append(out, redact.Secret{Name: name, Value: v})
		}
	}
	for _, name := range natsSecretEnv {
		env(name)
	}
	urls("nats_url", f.NatsURL)
	if name := f.PullRequest.TokenEnv; name != "" {
		env(name)
	}
	for _, name := range natsURLEnv {
		urls(name, os.Getenv(name))
	}
	for _, r := range subjects.Roles {
		rc := f.Roles.For(r)
		if o := rc.OpenAI; o != nil {
			key := o.APIKeyEnv
			if key == "" {
				key = runner.DefaultOpenAIKeyEnv
			}
			env(key)
			urls("roles."+string(r)+".openai.base_url", o.BaseURL)
		}
		if rc.RunnerName() == RunnerExec && (rc.Exec != nil || rc.Agent != "") {
			e := rc.execConfig()
			var listed []string
			if rc.Exec != nil {
				listed = rc.Exec.SecretEnv
			}
			secret := func(name string) bool { return redact.SecretEnvName(name) || slices.Contains(listed, name) }
			for k, v := range e.Env {
				if secret(k) {
					out = append(out, redact.Secret{Name: "roles." + string(r) + ".exec.env." + k, Value: v})
				}
			}
			inherit := e.Inherit
			if inherit == nil && rc.Agent != "" {
				inherit = runner.AgentInherit(rc.Agent)
			}
			for _, k := range inherit {
				if secret(k) {
					env(k)
				}
			}
			if rc.Agent != "" { // a proxy's URL may hold credentials
				for _, k := range runner.ProxyEnv() {
					urls(k, os.Getenv(k))
				}
			}
		}
	}
	return out
}

// Runners builds each role's runner without calling it: sim (the given
// Sim), exec or openai, rendering prompts from prompts (nil: the embedded
// defaults). Every runner is wrapped in runner.WithRedact with the
// secrets of File.Secrets(extraSecrets...) (when there are any), outside
// a runner.WithRecover, so even a panic's message is masked. A role with
// its own timeout has its runner wrapped in runner.WithTimeout; the
// pipeline's worker.role_timeout still bounds it from outside. openai
// runners keep worker.concurrency idle connections (default 16). A role
// that is not cached (see RoleCached) is marked in the set's NoCache.
// Errors name the role's field path. Close the set to release the runners'
// connections.
func (f *File) Runners(prompts *prompt.Set, sim *runner.Sim, extraSecrets ...string) (runner.Set, error) {
	return f.SandboxedRunners(nil, prompts, sim, extraSecrets...)
}

// SandboxedRunners is Runners with every exec runner contained by sb
// (runner.ExecConfig.Sandbox; nil: uncontained, as Runners).
func (f *File) SandboxedRunners(sb *sandbox.Sandbox, prompts *prompt.Set, sim *runner.Sim, extraSecrets ...string) (runner.Set, error) {
	var set runner.Set
	red := redact.New(f.Secrets(extraSecrets...)...)
	for _, r := range subjects.Roles {
		rc := f.Roles.For(r)
		run, err := rc.build(r, prompts, sim, sb, f.Worker.Concurrency)
		if err != nil {
			return runner.Set{}, fmt.Errorf("roles.%s: %w", r, err)
		}
		var mws []runner.Middleware
		if !red.Empty() {
			mws = append(mws, runner.WithRedact(red), runner.WithRecover())
		}
		if rc.Timeout > 0 {
			mws = append(mws, runner.WithTimeout(rc.Timeout))
		}
		if len(mws) > 0 {
			run = wrap(run, mws...)
		}
		if cached, _ := f.RoleCached(r); !cached {
			set.NoCache.Set(r, true)
		}
		switch r {
		case subjects.RolePlanner:
			set.Planner = run
		case subjects.RoleImplementer:
			set.Implementer = run
		case subjects.RoleJudge:
			set.Judge = run
		}
	}
	return set, nil
}

// RoleTimeouts returns the roles that have a timeout of their own.
func (f *File) RoleTimeouts() map[subjects.Role]time.Duration {
	out := map[subjects.Role]time.Duration{}
	for _, r := range subjects.Roles {
		if d := f.Roles.For(r).Timeout; d > 0 {
			out[r] = d
		}
	}
	return out
}

// wrap chains r in mws, keeping what the pipeline and the worker ask of
// the unwrapped runner: whether it reads lessons, and Close.
func wrap(r runner.Runner, mws ...runner.Middleware) runner.Runner {
	w := wrapped{Runner: runner.Chain(r, mws...), base: r}
	if lr, ok := r.(runner.LessonReader); ok {
		return lessonReading{wrapped: w, lr: lr}
	}
	return w
}

// wrapped is a runner in middlewares that still closes as the runner it
// wraps does.
type wrapped struct {
	runner.Runner
	base runner.Runner
}

// RunsInline implements runner.Inline: the chain runs inline when all of
// it does.
func (w wrapped) RunsInline() bool { return runner.RunsInline(w.Runner) }

// Unwrap implements runner.Unwrapper, so the wrapped runner's health
// check is found.
func (w wrapped) Unwrap() runner.Runner { return w.base }

// Close closes the wrapped runner when it is an io.Closer.
func (w wrapped) Close() error {
	if c, ok := w.base.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// lessonReading is a wrapped runner that still answers UsesLessons as the
// runner it wraps does.
type lessonReading struct {
	wrapped
	lr runner.LessonReader
}

// UsesLessons implements runner.LessonReader.
func (l lessonReading) UsesLessons() bool { return l.lr.UsesLessons() }

func (rc *Role) build(r subjects.Role, prompts *prompt.Set, sim *runner.Sim, sb *sandbox.Sandbox, concurrency int) (runner.Runner, error) {
	switch name := rc.RunnerName(); name {
	case RunnerSim:
		if sim == nil {
			return nil, fmt.Errorf("runner: sim: no simulator given")
		}
		return sim, nil
	case RunnerExec:
		if rc.Exec == nil && rc.Agent == "" {
			return nil, fmt.Errorf("exec: required when runner is exec")
		}
		cfg := rc.execConfig()
		cfg.Sandbox = sb
		return runner.NewExec(r, cfg, prompts)
	case RunnerOpenAI:
		if rc.OpenAI == nil {
			return nil, fmt.Errorf("openai: required when runner is openai")
		}
		cfg := rc.OpenAI.runnerConfig()
		cfg.MaxConns, cfg.RoleTimeout = concurrency, rc.Timeout
		return runner.NewOpenAI(r, cfg, prompts)
	default:
		return nil, fmt.Errorf("runner: %q is not a runner: want sim, exec or openai", name)
	}
}

// ExecArgv is the argv the role's exec runner starts: exec.argv, else its
// agent preset's; nil for neither.
func (rc *Role) ExecArgv() []string {
	if rc.Exec != nil && len(rc.Exec.Argv) > 0 {
		return rc.Exec.Argv
	}
	return runner.AgentArgv(rc.Agent)
}

// execConfig is the exec runner's config of the role: its exec fields
// over its agent preset, if any.
func (rc *Role) execConfig() runner.ExecConfig {
	e := rc.Exec
	if e == nil {
		e = &Exec{}
	}
	return runner.ExecConfig{
		Agent: rc.Agent, Argv: e.Argv, Dir: e.Dir, Env: e.Env, Inherit: e.Inherit,
		PromptEnv: e.PromptEnv, PromptFile: e.PromptFile,
		MaxOutputBytes: e.MaxOutputBytes, MaxStderrBytes: e.MaxStderrBytes,
		NoNetwork: e.Network != nil && !*e.Network,
	}
}

func (o *OpenAI) runnerConfig() runner.OpenAIConfig {
	return runner.OpenAIConfig{
		BaseURL: o.BaseURL, Model: o.Model, APIKeyEnv: o.APIKeyEnv,
		Temperature: o.Temperature, MaxTokens: o.MaxTokens,
		RequestTimeout: o.RequestTimeout, MaxRetries: o.MaxRetries,
		RetryBase: o.RetryBase, RetryMax: o.RetryMax, System: o.System,
		JSONMode: o.JSONMode, AllowInsecureHTTP: o.AllowInsecureHTTP,
	}
}
