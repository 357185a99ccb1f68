package config

import (
	"fmt"
	"time"

	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Runners builds each role's runner without calling it: sim (the given
// Sim), exec or openai, rendering prompts from prompts (nil: the embedded
// defaults). A role with its own timeout has its runner wrapped in
// runner.WithTimeout; the pipeline's worker.role_timeout still bounds it
// from outside. A role that is not cached (see Role.Cached) is marked in
// the set's NoCache. Errors name the role's field path.
func (f *File) Runners(prompts *prompt.Set, sim *runner.Sim) (runner.Set, error) {
	var set runner.Set
	for _, r := range subjects.Roles {
		rc := f.Roles.For(r)
		run, err := rc.build(r, prompts, sim)
		if err != nil {
			return runner.Set{}, fmt.Errorf("roles.%s: %w", r, err)
		}
		if rc.Timeout > 0 {
			run = withTimeout(run, rc.Timeout)
		}
		if cached, _ := rc.Cached(); !cached {
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

// withTimeout wraps r in runner.WithTimeout(d), keeping what the pipeline
// asks of the unwrapped runner: whether it reads lessons.
func withTimeout(r runner.Runner, d time.Duration) runner.Runner {
	wrapped := runner.Chain(r, runner.WithTimeout(d))
	if lr, ok := r.(runner.LessonReader); ok {
		return lessonReading{Runner: wrapped, lr: lr}
	}
	return wrapped
}

// lessonReading is a wrapped runner that still answers UsesLessons as the
// runner it wraps does.
type lessonReading struct {
	runner.Runner
	lr runner.LessonReader
}

// UsesLessons implements runner.LessonReader.
func (l lessonReading) UsesLessons() bool { return l.lr.UsesLessons() }

func (rc *Role) build(r subjects.Role, prompts *prompt.Set, sim *runner.Sim) (runner.Runner, error) {
	switch name := rc.RunnerName(); name {
	case RunnerSim:
		if sim == nil {
			return nil, fmt.Errorf("runner: sim: no simulator given")
		}
		return sim, nil
	case RunnerExec:
		if rc.Exec == nil {
			return nil, fmt.Errorf("exec: required when runner is exec")
		}
		return runner.NewExec(r, rc.Exec.runnerConfig(), prompts)
	case RunnerOpenAI:
		if rc.OpenAI == nil {
			return nil, fmt.Errorf("openai: required when runner is openai")
		}
		return runner.NewOpenAI(r, rc.OpenAI.runnerConfig(), prompts)
	default:
		return nil, fmt.Errorf("runner: %q is not a runner: want sim, exec or openai", name)
	}
}

func (e *Exec) runnerConfig() runner.ExecConfig {
	return runner.ExecConfig{
		Argv: e.Argv, Dir: e.Dir, Env: e.Env, Inherit: e.Inherit,
		PromptEnv: e.PromptEnv, PromptFile: e.PromptFile,
		MaxOutputBytes: e.MaxOutputBytes, MaxStderrBytes: e.MaxStderrBytes,
	}
}

func (o *OpenAI) runnerConfig() runner.OpenAIConfig {
	return runner.OpenAIConfig{
		BaseURL: o.BaseURL, Model: o.Model, APIKeyEnv: o.APIKeyEnv,
		Temperature: o.Temperature, MaxTokens: o.MaxTokens,
		RequestTimeout: o.RequestTimeout, MaxRetries: o.MaxRetries,
		RetryBase: o.RetryBase, RetryMax: o.RetryMax, System: o.System,
	}
}
